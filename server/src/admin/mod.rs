//! Administration of a data directory from outside the server: `dbconsole keys` (create, list,
//! revoke caller keys; add, rotate and show seal keys) and `dbconsole backup`, one concept in
//! one place.
//!
//! - [`protocol`]: the messages, one JSON line each way;
//! - [`operations`]: what a request does to a store, and the one dispatch of a request on redb
//!   ([`operations::run_on_redb_store`]);
//! - [`seal`]: the seal keys (add one to the key file, rotate, show the store's);
//! - [`socket`]: the server side, the Unix socket a running server answers on;
//! - [`client`]: the command side, through a running server's socket, else on the data file
//!   opened here;
//! - [`print`](mod@print): replies printed for people.

pub mod client;
pub mod operations;
pub mod print;
pub mod protocol;
pub mod seal;
#[cfg(unix)]
pub mod socket;
