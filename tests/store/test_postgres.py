"""The PostgreSQL store: opening it from SENTIENT_DATABASE_URL, its schema, and what only it can get wrong.

Everything the two backends share runs against both in the other store tests (``database_url``).
"""

from __future__ import annotations

import argparse
import io
import socket
import threading
from pathlib import Path

import psycopg
import pytest
from fakes.postgres import PostgresServer
from rich.console import Console

from sentient.cli.errors import EXIT_OK
from sentient.cli.projects import add_projects_parser, run_projects
from sentient.settings import Settings
from sentient.store import ProjectStore, StoreError, StoreWriter
from sentient.store.postgres import BASE_VERSION, MIGRATIONS, redact
from sentient.store.schema import SCHEMA_VERSION


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "url",
    ["mysql://user:s3cret@localhost/sentient", "sentient.db", "postgresql://user:s3cret@localhost/db?nonsense=1"],
)
def test_a_malformed_url_is_refused_naming_the_variable_and_hiding_the_password(tmp_path: Path, url: str) -> None:
    with pytest.raises(StoreError, match="SENTIENT_DATABASE_URL") as caught:
        ProjectStore.open(tmp_path, url)

    assert "s3cret" not in str(caught.value)
    assert not isinstance(caught.value.__cause__, psycopg.OperationalError), "refused before connecting"


def test_an_unreachable_server_is_one_clear_error(tmp_path: Path) -> None:
    url = f"postgresql://sentient:s3cret@127.0.0.1:{_closed_port()}/sentient"

    with pytest.raises(
        StoreError, match=r"cannot connect to the PostgreSQL database of SENTIENT_DATABASE_URL"
    ) as caught:
        ProjectStore.open(tmp_path, url)

    message = str(caught.value)
    assert "s3cret" not in message and ":***@127.0.0.1" in message
    assert "\n" not in message


def test_the_cli_reports_an_unreachable_server_as_an_error_line(tmp_path: Path) -> None:
    url = f"postgresql://sentient@127.0.0.1:{_closed_port()}/sentient"
    settings = Settings(results_dir=tmp_path, cache_dir=tmp_path / "cache", database_url=url)
    parser = argparse.ArgumentParser(prog="sentient")
    add_projects_parser(parser.add_subparsers(dest="command", required=True))
    err = io.StringIO()

    code = run_projects(
        parser.parse_args(["projects", "list"]), settings, err=Console(file=err, width=300, color_system=None)
    )

    assert code != EXIT_OK
    assert err.getvalue().startswith("error: cannot connect to the PostgreSQL database of SENTIENT_DATABASE_URL")


def test_the_url_is_not_shown_in_the_settings_repr() -> None:
    settings = Settings(database_url="postgresql://sentient:s3cret@db.internal/sentient")
    assert "s3cret" not in repr(settings)


def test_redact_hides_passwords_in_the_authority_and_the_query() -> None:
    assert redact("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://h/db?user=u&password=pw&sslmode=require") == (
        "postgresql://h/db?user=u&password=***&sslmode=require"
    )
    assert redact("postgresql://h/db") == "postgresql://h/db"


def test_a_new_database_gets_the_current_schema_once_even_when_opened_twice_at_once(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    url = postgres.new_database()
    stores: list[ProjectStore] = []
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            stores.append(ProjectStore.open(tmp_path, url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert errors == [] and len(stores) == 3
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM sentient_schema").fetchall() == [(SCHEMA_VERSION,)]
    for store in stores:
        store.close()


def test_every_schema_version_has_its_postgres_migration() -> None:
    assert sorted(MIGRATIONS) == list(range(BASE_VERSION + 1, SCHEMA_VERSION + 1))


def test_a_database_from_a_newer_sentient_is_refused(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    ProjectStore.open(tmp_path, url).close()
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE sentient_schema SET version = %s", (SCHEMA_VERSION + 1,))

    with pytest.raises(StoreError, match="newer than this Sentient"):
        ProjectStore.open(tmp_path, url)


def test_the_store_reconnects_after_the_server_dropped_its_connection(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    with ProjectStore.open(tmp_path, url) as store:
        store.create_project("p1", "goal", "general_agent", {})
        with psycopg.connect(url, autocommit=True) as admin:  # what a server restart does to a client
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

        with pytest.raises(StoreError):
            store.get_project("p1")  # the call that finds the connection gone fails, with our error
        assert store.get_project("p1").goal == "goal"  # the next one connects again


def test_a_list_is_refused_as_sqlite_refuses_it_rather_than_stored_as_an_array(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    with ProjectStore.open(tmp_path, postgres.new_database()) as store:
        store.create_project("p1", "goal", "general_agent", {})
        with pytest.raises(StoreError, match="cannot store a list"), store.transaction() as conn:
            conn.execute("UPDATE projects SET goal = ? WHERE project_id = 'p1'", (["not", "text"],))
        assert store.get_project("p1").goal == "goal"


def test_two_processes_share_one_database_and_keep_their_files_apart(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    with ProjectStore.open(tmp_path / "a", url) as a, ProjectStore.open(tmp_path / "b", url) as b:
        a.create_project("p1", "goal", "general_agent", {})
        with StoreWriter(a, "p1"):
            pass
        assert [p.project_id for p in b.list_projects()] == ["p1"]
        assert b.project_dir("p1") == tmp_path / "b" / "p1"
