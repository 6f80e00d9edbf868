"""psycopg 3 through the dbconsole door, run by server/tests/door_clients.rs with the
contract virtualenv's Python. Environment: DOOR_HOST, DOOR_PORT, DOOR_USER, DOOR_PASSWORD,
DOOR_DB, DOOR_TABLE (200 rows: id, label), DOOR_CAP. Prints one line per check, then
"N passed, N failed"."""

import os
import sys

import psycopg
from psycopg import errors

passed = failed = 0


def check(name, run):
    global passed, failed
    try:
        run()
        passed += 1
        print("ok", name)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failed += 1
        print("FAILED", name, repr(error))


def connect():
    return psycopg.connect(
        host=os.environ["DOOR_HOST"],
        port=os.environ["DOOR_PORT"],
        user=os.environ["DOOR_USER"],
        password=os.environ["DOOR_PASSWORD"],
        dbname=os.environ["DOOR_DB"],
        sslmode="require",
        application_name="door_psycopg",
    )


table = os.environ["DOOR_TABLE"]
cap = int(os.environ["DOOR_CAP"])
conn = connect()
conn.autocommit = True


def parameters():
    with conn.cursor() as cur:
        cur.execute(f"select label from {table} where id = %s", (7,))
        assert cur.fetchone() == ("row 7",)
        cur.execute("select %s::int + 1, %s::text", (41, "x"), binary=True)
        assert cur.fetchone() == (42, "x")


def pipeline():
    a, b, c = conn.cursor(), conn.cursor(), conn.cursor()
    with conn.pipeline():
        a.execute(f"select count(*) from {table}")
        b.execute("select %s::int * 2", (21,))
        c.execute(f"select label from {table} where id = %s", (3,))
    assert a.fetchone() == (200,)
    assert b.fetchone() == (42,)
    assert c.fetchone() == ("row 3",)
    for cursor in (a, b, c):
        cursor.close()


def pipeline_with_a_refusal():
    try:
        with conn.pipeline():
            with conn.cursor() as a, conn.cursor() as b:
                a.execute("select 1")
                b.execute("set role postgres")
        raise AssertionError("set role went through")
    except errors.InsufficientPrivilege as error:
        assert "keeps the role of its credential" in str(error), error
    with conn.cursor() as cur:
        cur.execute("select 5")
        assert cur.fetchone() == (5,)


def named_cursor():
    conn.autocommit = False
    try:
        with conn.cursor(name="door_named") as cur:
            cur.itersize = 20
            cur.execute(f"select id from {table} order by id")
            rows = [row[0] for row in cur]
        assert rows == list(range(1, cap + 1)), (len(rows), rows[-3:])
        conn.commit()
    finally:
        conn.autocommit = True


def copy_refused():
    with conn.cursor() as cur:
        try:
            with cur.copy(f"copy {table} to stdout") as copy:
                for _ in copy:
                    pass
            raise AssertionError("copy went through")
        except errors.FeatureNotSupported as error:
            assert "COPY does not go through the door" in str(error), error


check("parameters, text and binary", parameters)
check("pipeline mode", pipeline)
check("a refusal inside a pipeline, then the connection goes on", pipeline_with_a_refusal)
check("a named cursor reads to the row cap", named_cursor)
check("COPY is refused", copy_refused)
conn.close()
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
