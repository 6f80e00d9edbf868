//! What the unit tests share: a store in memory and a sample database.

use dbconsole_core::model::{
    Adapter, Credential, CredentialId, Database, DatabaseId, SealedSecret, Timestamp, TlsMaterial,
};
use dbconsole_core::seal::Sealer;

use crate::RedbStorage;

pub(crate) fn sample_database(name: &str, api_id: Option<&str>) -> Database {
    let now = Timestamp::now();
    Database {
        id: DatabaseId::generate(),
        api_id: api_id.map(str::to_owned),
        name: name.to_owned(),
        adapter: Adapter::Postgres,
        hostname: "db.internal".to_owned(),
        port: None,
        database: "orders".to_owned(),
        ssl: true,
        verify_server_hostname: false,
        restrict_access: false,
        review_bypass_allowed: false,
        group: None,
        slack_channel: None,
        tunnel_id: None,
        ai_enabled: false,
        ai_max_rows: 100,
        connection_parameters: Vec::new(),
        credentials: vec![Credential {
            id: CredentialId::generate(),
            username: "reader".to_owned(),
            password: Some(SealedSecret::from_stored(b"sealed-pw".to_vec())),
            password_for: None,
            hostname: None,
            ai_allowed: false,
            timeout: None,
            reviews_required: 0,
            default_credential: true,
        }],
        tls: TlsMaterial {
            ca_cert: Some(SealedSecret::from_stored(b"sealed-ca".to_vec())),
            ..TlsMaterial::default()
        },
        inserted_at: now,
        updated_at: now,
    }
}

pub(crate) fn store() -> RedbStorage {
    RedbStorage::in_memory(&Sealer::ephemeral().unwrap()).unwrap()
}
