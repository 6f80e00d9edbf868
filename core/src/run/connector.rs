//! The [`Connector`] a run is given: it opens the credential's secrets and the database's tunnel
//! only when its pool opens a connection, and never before.

use std::sync::Arc;
use std::time::Duration;

use super::{Connector, Opened};
use crate::check::CheckTarget;
use crate::check::tunnel::{TunnelDialer, no_dialer_message};
use crate::model::{Credential, Database};
use crate::seal::Sealer;

/// Opens `credential`'s target of `db` when a connection opens, through the database's tunnel
/// when it has one (reached by `dialer`); `timeout` bounds opening it.
pub fn connector(
    sealer: &Sealer,
    db: &Database,
    credential: &Credential,
    dialer: Option<Arc<dyn TunnelDialer>>,
    timeout: Duration,
) -> Connector {
    let sealer = sealer.clone();
    let db = Arc::new(db.clone());
    let credential = Arc::new(credential.clone());
    Arc::new(move || {
        let sealer = sealer.clone();
        let db = Arc::clone(&db);
        let credential = Arc::clone(&credential);
        let dialer = dialer.clone();
        Box::pin(async move {
            let mut target = CheckTarget::open(&sealer, &db, &credential, timeout).map_err(
                |error| match error {
                    crate::check::OpenError::Held(why) => why,
                    crate::check::OpenError::Seal(error) => {
                        tracing::error!(%error, "a stored secret does not open");
                        "a stored secret of this database does not open with this server's keys"
                            .to_owned()
                    }
                },
            )?;
            let tunnel = match (&target.tunnel_id, dialer) {
                (None, _) => None,
                (Some(id), None) => return Err(no_dialer_message(id)),
                (Some(id), Some(dialer)) => {
                    let endpoint = dialer
                        .forward(id, &target.host, target.port)
                        .await
                        .map_err(|error| format!("tunnel \"{id}\": {error}"))?;
                    target.connect_via = Some(endpoint.local_addr());
                    Some(endpoint)
                }
            };
            Ok(Opened { target, tunnel })
        })
    })
}
