from sentient.tools.docs_search import DocsIndex
from sentient.tools.tables import named_row, tables_as_records

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


LIMITS = (
    "Limits Limit: Daily quota; Value: 160 queries per day. Limit: Query timeout; Value: 12 seconds. "
    "Limit: Data delay; Value: 72 hours. Version: ACP-7; Date: 2021; Change: lockout introduced."
)


def test_a_row_is_named_by_its_first_cell_in_the_question() -> None:
    start = named_row(LIMITS, "What is the query timeouts of Marrowgate Lite?")  # a plural still names it

    assert start is not None and LIMITS[start:].startswith("Limit: Query timeout; Value: 12 seconds.")
    assert named_row(LIMITS, "What is the timeout of a query on Lite?") is None  # not the words in order
    assert named_row(LIMITS, "How long is the delay?") is None


def test_a_row_about_the_document_itself_or_a_vague_or_short_word_names_nothing() -> None:
    title = "policy_acp7.md - Access and Credential Policy ACP-7 (SUPERSEDED) / Revision history"

    assert named_row(LIMITS, "Under ACP-7, how long were tokens valid?", title) is None
    assert named_row(LIMITS, "Under ACP-7, how long were tokens valid?") is not None
    clusters = "Property: Nodes; Value: 22. Property: Owner; Value: Sandpiper."
    assert named_row(clusters, "How many nodes will the cluster have after its expansion?") is None
    teams = "Team: Cormorant; Lead: Yevgenia Palk. Team: Gannet; Lead: Solveig Ashdown."
    assert named_row(teams, "Who leads team Gannet?") == teams.index("Team: Gannet")
    keys = "Key: No; Value: 3. Key: Sev1; Value: 4."
    assert named_row(keys, "Is there no key? What pages Sev1?") == keys.index("Key: Sev1")
