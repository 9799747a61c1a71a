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


def test_a_search_snippet_shows_the_matching_row_with_its_column_names(tmp_path):
    (tmp_path / "teams.md").write_text(DIRECTORY + "\n" + "Filler sentence about teams. " * 40)

    with DocsIndex.from_folder(tmp_path) as index:
        [hit] = index.search("Cormorant on-call lead")

    assert "Team: Cormorant; Team lead: Yevgenia Palk; On-call lead: Rafferty Coll" in hit.snippet
