//! The generators: every request a property sends, each with what it must read back as (see
//! [`Given`]).

mod certificates;
mod dashboard;
mod database;
mod hostile;
mod secrets;
mod steps;
mod values;

pub(crate) use self::certificates::*;
pub(crate) use self::dashboard::*;
pub(crate) use self::database::*;
pub(crate) use self::hostile::*;
pub(crate) use self::secrets::*;
pub(crate) use self::steps::*;
pub(crate) use self::values::*;
