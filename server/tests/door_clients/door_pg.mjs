// node's `pg` through the dbconsole door, run by server/tests/door_clients.rs with the
// console's node_modules. Environment: DOOR_HOST, DOOR_PORT, DOOR_USER, DOOR_PASSWORD, DOOR_DB,
// DOOR_TABLE (200 rows: id, label). Prints one line per check, then "N passed, N failed".

import { createRequire } from "node:module";

const require = createRequire(`${process.env.CONSOLE_DIR}/package.json`);
const pg = require("pg");

let passed = 0;
let failed = 0;

async function check(name, run) {
  try {
    await run();
    passed += 1;
    console.log(`ok ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAILED ${name}: ${error?.stack ?? error}`);
  }
}

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

const config = {
  host: process.env.DOOR_HOST,
  port: Number(process.env.DOOR_PORT),
  user: process.env.DOOR_USER,
  password: process.env.DOOR_PASSWORD,
  database: process.env.DOOR_DB,
  ssl: { rejectUnauthorized: false },
  application_name: "door_pg",
};
const table = process.env.DOOR_TABLE;
const client = new pg.Client(config);
await client.connect();

await check("a named statement, run again and again", async () => {
  for (let i = 1; i <= 6; i += 1) {
    const result = await client.query({ name: "door-by-id", text: `select id, label from ${table} where id = $1`, values: [i] });
    expect(result.rows.length === 1 && result.rows[0].label === `row ${i}`, `row ${i}: ${JSON.stringify(result.rows)}`);
  }
});

await check("cancel: a cancel request on a new plain connection ends pg_sleep", async () => {
  const started = Date.now();
  const sleeping = client.query("select pg_sleep(30)");
  await new Promise((done) => setTimeout(done, 1000));
  // pg's own cancel: a new connection without TLS sending the process id and key it was given.
  const canceller = new pg.Client({ ...config, ssl: false });
  canceller.cancel(client, client.activeQuery);
  try {
    await sleeping;
    throw new Error("not cancelled");
  } catch (error) {
    expect(error.code === "57014", `57014, got ${error.code} ${error.message}`);
  }
  expect(Date.now() - started < 20_000, "well before 30 s");
  const after = await client.query("select 3 as n");
  expect(after.rows[0].n === 3, "the connection still serves");
});

await check("an error in a named statement leaves the connection usable", async () => {
  try {
    await client.query({ name: "door-bad", text: "select 1/0" });
    throw new Error("no error");
  } catch (error) {
    expect(error.code === "22012", `22012, got ${error.code}`);
  }
  const after = await client.query({ name: "door-by-id", text: `select id, label from ${table} where id = $1`, values: [2] });
  expect(after.rows[0].label === "row 2", "the named statement still runs");
});

await client.end();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
