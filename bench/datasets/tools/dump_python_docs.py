"""Dump the default Python-docs corpus as JSON lines, to pick facts for python_docs_qa.jsonl.

Usage: python bench/datasets/tools/dump_python_docs.py OUT.jsonl

One line per passage, exactly as `DocsIndex.python_docs` stores them:
{"evidence": "topics#assert" | "module asyncio.tasks" | "asyncio.tasks.gather", "title", "body"}.
The "evidence" key is the form used in the dataset's "evidence" field.
"""

from __future__ import annotations

import json
import sys

from sentient.tools.documents import python_documents, split_passages


def evidence_key(title: str) -> str:
    """The dataset's evidence name for a corpus title."""
    if title.startswith("Python reference: "):
        return "topics#" + title.removeprefix("Python reference: ")
    if title.startswith("Python module "):
        return "module " + title.removeprefix("Python module ")
    return title


def main(out: str) -> None:
    with open(out, "w", encoding="utf-8") as fh:
        for _source, title, text in python_documents():
            for body in split_passages(text):
                fh.write(json.dumps({"evidence": evidence_key(title), "title": title, "body": body}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
