"""asyncpg through the dbconsole door (binary results everywhere), run by
server/tests/door_clients.rs. Environment: DOOR_HOST, DOOR_PORT, DOOR_USER, DOOR_PASSWORD,
DOOR_DB, DOOR_TABLE (200 rows: id, label), and DOOR_PROTECTED_DB with DOOR_PROTECTED_TABLE (id,
email masked to '****', ssn hidden). Prints one line per check, then "N passed, N failed"."""

import asyncio
import decimal
import os
import ssl
import sys

import asyncpg

passed = failed = 0


async def check(name, run):
    global passed, failed
    try:
        await run()
        passed += 1
        print("ok", name)
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failed += 1
        print("FAILED", name, repr(error))


def tls():
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def connect(database):
    return await asyncpg.connect(
        host=os.environ["DOOR_HOST"],
        port=int(os.environ["DOOR_PORT"]),
        user=os.environ["DOOR_USER"],
        password=os.environ["DOOR_PASSWORD"],
        database=database,
        ssl=tls(),
        server_settings={"application_name": "door_asyncpg"},
    )


async def main():
    table = os.environ["DOOR_TABLE"]
    conn = await connect(os.environ["DOOR_DB"])

    async def binary():
        rows = await conn.fetch(f"select id, label, id::numeric / 4 as q from {table} where id <= $1 order by id", 3)
        assert [(r["id"], r["label"]) for r in rows] == [(1, "row 1"), (2, "row 2"), (3, "row 3")], rows
        assert rows[1]["q"] == decimal.Decimal("0.5"), rows[1]["q"]

    async def prepared():
        statement = await conn.prepare(f"select label from {table} where id = $1")
        for i in range(1, 7):
            assert await statement.fetchval(i) == f"row {i}"

    async def refused():
        try:
            await conn.execute("set session authorization postgres")
            raise AssertionError("went through")
        except asyncpg.exceptions.InsufficientPrivilegeError as error:
            assert "keeps the role" in str(error), error
        assert await conn.fetchval("select 9") == 9

    await check("binary results", binary)
    await check("a prepared statement six times", prepared)
    await check("a refusal, then the connection goes on", refused)
    await conn.close()

    protected = await connect(os.environ["DOOR_PROTECTED_DB"])
    masked_table = os.environ["DOOR_PROTECTED_TABLE"]

    async def masked():
        rows = await protected.fetch(f"select id, email from {masked_table} order by id")
        assert [(r["id"], r["email"]) for r in rows] == [(1, "****"), (2, None)], rows

    async def hidden():
        try:
            await protected.fetch(f"select ssn from {masked_table}")
            raise AssertionError("the hidden column was read")
        except (
            asyncpg.exceptions.InsufficientPrivilegeError,
            asyncpg.exceptions.UndefinedColumnError,
        ):
            # Through the masking view the column is not there; on the table it is refused.
            pass

    await check("a masked column reads as its mask in binary", masked)
    await check("a hidden column is refused", hidden)
    await protected.close()


asyncio.run(main())
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
