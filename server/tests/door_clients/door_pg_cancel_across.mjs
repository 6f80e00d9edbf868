// A cancel request sent to another node than the one holding the session (what a load
// balancer may do): node's `pg` connects to the door of node A, starts pg_sleep(30), and sends
// its cancel request, with the key node A gave it, to the door of node B (DOOR_OTHER_PORT).
// Run by server/tests/door_clients.rs. Prints one line per check, then "N passed, N failed".

import { createRequire } from "node:module";

const require = createRequire(`${process.env.CONSOLE_DIR}/package.json`);
const pg = require("pg");

let passed = 0;
let failed = 0;
const config = {
  host: process.env.DOOR_HOST,
  port: Number(process.env.DOOR_PORT),
  user: process.env.DOOR_USER,
  password: process.env.DOOR_PASSWORD,
  database: process.env.DOOR_DB,
  ssl: { rejectUnauthorized: false },
  application_name: "door_pg_across",
};
const client = new pg.Client(config);
await client.connect();
try {
  const started = Date.now();
  const sleeping = client.query("select pg_sleep(30)");
  await new Promise((done) => setTimeout(done, 1000));
  const other = new pg.Client({ ...config, port: Number(process.env.DOOR_OTHER_PORT), ssl: false });
  other.cancel(client, client.activeQuery);
  try {
    await sleeping;
    throw new Error("not cancelled");
  } catch (error) {
    if (error.code !== "57014") throw new Error(`57014, got ${error.code} ${error.message}`);
  }
  if (Date.now() - started > 20_000) throw new Error("cancelled too late");
  const after = await client.query("select 4 as n");
  if (after.rows[0].n !== 4) throw new Error("the connection does not serve");
  passed += 1;
  console.log("ok a cancel sent to node B ends the statement running through node A");
} catch (error) {
  failed += 1;
  console.log(`FAILED a cancel sent to node B: ${error?.stack ?? error}`);
}
await client.end();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
