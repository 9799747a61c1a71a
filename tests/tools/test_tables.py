from sentient.tools.docs_search import DocsIndex
from sentient.tools.tables import tables_as_records

DIRECTORY = """# Team directory

| Team | Team lead | On-call lead | Channel |
|---|---|:---:|---|
| Lanternfish | Anselm Grieve | Odile Varnavas | #lf-pager |
| Cormorant | Yevgenia Palk | Rafferty Coll | #cormorant-night |

Teams own their services end to end.
"""


def test_each_row_names_its_columns_and_ends_like_a_sentence():
    text = tables_as_records(DIRECTORY)

    assert "Team: Cormorant; Team lead: Yevgenia Palk; On-call lead: Rafferty Coll; Channel: #cormorant-night." in text
    assert "|" not in text
    assert text.startswith("# Team directory\n\n")
    assert text.rstrip().endswith("Teams own their services end to end.")


def test_empty_cells_are_left_out_and_escaped_pipes_stay_in_their_cell():
    table = "| Flag | Meaning | Note |\n|---|---|---|\n| `a \\| b` | either |  |\n"

    assert tables_as_records(table).strip() == "Flag: `a | b`; Meaning: either."


def test_pipes_without_a_separator_row_are_not_a_table():
    text = "| not | a table |\nplain text\n"

    assert tables_as_records(text) == text.rstrip("\n")


PRECEDENCE = """Operator precedence

+-----------------+---------------------------+
| Operator        | Description               |
|=================|===========================|
| "*", "@", "/"   | Multiplication, matrix    |
|                 | multiplication, division  |
+-----------------+---------------------------+
| "|"             | Bitwise OR                |
+-----------------+---------------------------+
| ":="            | Assignment expression     |
+-----------------+---------------------------+

The table ends here.
"""


def test_a_grid_table_row_joins_its_wrapped_lines_per_column():
    text = tables_as_records(PRECEDENCE)

    assert text.splitlines() == [
        "Operator precedence",
        "",
        'Operator: "*", "@", "/"; Description: Multiplication, matrix multiplication, division.',
        'Operator: "|"; Description: Bitwise OR.',  # a pipe inside a cell is not a column break
        'Operator: ":="; Description: Assignment expression.',
        "",
        "The table ends here.",
    ]


def test_a_grid_table_with_the_rst_header_rule_is_read_too():
    table = "+---+-----+\n| a | b   |\n+===+=====+\n| 1 | one |\n+---+-----+\n"

    assert tables_as_records(table) == "a: 1; b: one."


def test_a_grid_table_it_cannot_read_stays_as_it_is():
    spanning = "+---+-----+\n| a | b   |\n+===+=====+\n| one cell  |\n+---+-----+"
    unclosed = "+---+-----+\n| a | b   |\n+===+=====+\n| 1 | one |\ntext after the row"
    no_header = "+---+-----+\n| 1 | one |\n+---+-----+"
    open_at_the_end = "+---+-----+\n| a | b   |\n+===+=====+\n| 1 | one |\n+---+-----+\n| 2 | two |"

    for text in (spanning, unclosed, no_header, open_at_the_end):
        assert tables_as_records(text) == text


def test_a_search_snippet_shows_the_matching_row_with_its_column_names(tmp_path):
    (tmp_path / "teams.md").write_text(DIRECTORY + "\n" + "Filler sentence about teams. " * 40)

    with DocsIndex.from_folder(tmp_path) as index:
        [hit] = index.search("Cormorant on-call lead")

    assert "Team: Cormorant; Team lead: Yevgenia Palk; On-call lead: Rafferty Coll" in hit.snippet
