//! Round trips and refusals of the stored forms.

#[allow(clippy::wildcard_imports)]
use super::*;
use super::{access::*, audit::*, databases::*, keys::*, queries::*, seal_keys::*};
use crate::model::Secret;
use crate::seal::{Place, Sealer};

fn event_with(changes: &[&str]) -> AuditEvent {
    AuditEvent {
        id: EventId::generate(),
        at: Timestamp::now(),
        action: AuditAction::DatabaseCreate,
        resource_id: "db_01".to_owned(),
        actor: Actor::named("tests"),
        request_id: Some("req-1".to_owned()),
        changes: changes.iter().map(|c| (*c).to_owned()).collect(),
        run: None,
    }
}

#[test]
fn audit_changes_round_trip_compactly_whatever_the_names() {
    let changes = [
        "adapter",
        "name",
        "ssl_key",
        "data_protection.inherits_from",
        "credentials[reader]",
        "credentials[reader].password",
        // Usernames that look like the encoding itself.
        "credentials[a].password]",
        "credentials[a].password].timeout",
        "credentials[]",
        "credentials[x].not_a_field",
        "credentials[",
        "something new",
    ];
    let event = event_with(&changes);
    let bytes = encode_audit_event(&event).unwrap();
    let back = decode_audit_event(event.id.as_str(), &bytes).unwrap();
    assert_eq!(back, event);

    // A create's usual names: far smaller than as strings (version 1).
    let usual = event_with(&[
        "adapter",
        "name",
        "hostname",
        "database",
        "credentials[reader]",
        "credentials[reader].password",
    ]);
    let v2 = encode_audit_event(&usual).unwrap();
    let v1 = framed(
        RECORD_V1,
        &AuditEventV1 {
            id: usual.id.as_str().to_owned(),
            at: usual.at.as_micros(),
            action: usual.action.as_str().to_owned(),
            resource_id: usual.resource_id.clone(),
            actor_id: None,
            actor_name: usual.actor.name.clone(),
            request_id: usual.request_id.clone(),
            changes: usual.changes.clone(),
        },
    )
    .unwrap();
    assert!(
        v2.len() + 50 < v1.len(),
        "v2 {} bytes, v1 {}",
        v2.len(),
        v1.len()
    );
    // Events written before (version 1) still read.
    assert_eq!(decode_audit_event(usual.id.as_str(), &v1).unwrap(), usual);
}

fn sample_database(name: &str, api_id: Option<&str>) -> Database {
    let now = Timestamp::now();
    Database {
        id: DatabaseId::generate(),
        api_id: api_id.map(str::to_owned),
        name: name.to_owned(),
        adapter: Adapter::Mysql,
        hostname: "db.internal".to_owned(),
        port: Some(3307),
        database: "orders".to_owned(),
        ssl: true,
        verify_server_hostname: false,
        restrict_access: true,
        review_bypass_allowed: false,
        group: Some("prod".to_owned()),
        slack_channel: None,
        tunnel_id: None,
        ai_enabled: true,
        ai_max_rows: 99,
        connection_parameters: vec![ConnectionParameter {
            name: "search_path".to_owned(),
            value: String::new(),
        }],
        credentials: Vec::new(),
        tls: TlsMaterial::default(),
        inserted_at: now,
        updated_at: now,
    }
}

#[test]
fn database_round_trips_with_its_sealed_secrets_as_they_are() {
    let sealer = Sealer::ephemeral().unwrap();
    let mut database = sample_database("Orders", Some("ext"));
    let id = CredentialId::generate();
    let place = Place::password(database.id.as_str(), id.as_str());
    database.credentials.push(Credential {
        password: Some(
            sealer
                .seal(&Secret::from("pw-writer-distinctive"), &place)
                .unwrap(),
        ),
        id,
        username: "writer".to_owned(),
        hostname: Some("replica".to_owned()),
        ai_allowed: true,
        timeout: Some(5),
        reviews_required: 2,
        default_credential: false,
        password_for: Some([9; 32]),
    });
    let bytes = encode_database(&database).unwrap();
    assert_eq!(bytes[0], DATABASE_V3);
    assert!(!bytes.windows(21).any(|w| w == b"pw-writer-distinctive"));
    let back = decode_database(database.id.as_str(), &bytes).unwrap();
    assert_eq!(back, database);
    let password = back.credentials.last().unwrap().password.as_ref().unwrap();
    assert_eq!(
        sealer.open(password, &place).unwrap().expose(),
        b"pw-writer-distinctive"
    );
}

#[test]
fn secrets_keep_their_key_and_version_1_secrets_are_key_0s() {
    let mut database = sample_database("Orders", None);
    database.tls.ca_cert = Some(SealedSecret::new(7, b"sealed-ca".to_vec()));
    let bytes = encode_database(&database).unwrap();
    let back = decode_database(database.id.as_str(), &bytes).unwrap();
    assert_eq!(back.tls.ca_cert.as_ref().map(SealedSecret::key), Some(7));
    assert_eq!(back, database);

    // The same record as version 1 wrote it: secrets are their sealed bytes alone, and
    // credentials have no `password_for`.
    let (stored, version) = decode_database_stored(database.id.as_str(), &bytes).unwrap();
    assert_eq!(version, DATABASE_V3);
    let mut stored = DatabaseV1::<CredentialV1> {
        credentials: stored
            .credentials
            .into_iter()
            .map(|c| CredentialV1 {
                id: c.id,
                username: c.username,
                password: c.password,
                hostname: c.hostname,
                ai_allowed: c.ai_allowed,
                timeout: c.timeout,
                reviews_required: c.reviews_required,
                default_credential: c.default_credential,
            })
            .collect(),
        id: stored.id,
        api_id: stored.api_id,
        name: stored.name,
        adapter: stored.adapter,
        hostname: stored.hostname,
        port: stored.port,
        database: stored.database,
        ssl: stored.ssl,
        verify_server_hostname: stored.verify_server_hostname,
        restrict_access: stored.restrict_access,
        review_bypass_allowed: stored.review_bypass_allowed,
        group: stored.group,
        slack_channel: stored.slack_channel,
        tunnel_id: stored.tunnel_id,
        ai_enabled: stored.ai_enabled,
        ai_max_rows: stored.ai_max_rows,
        connection_parameters: stored.connection_parameters,
        ca_cert: Some(b"sealed-ca".to_vec()),
        client_cert: stored.client_cert,
        client_key: stored.client_key,
        inserted_at: stored.inserted_at,
        updated_at: stored.updated_at,
    };
    let v1 = framed(RECORD_V1, &stored).unwrap();
    let old = decode_database(database.id.as_str(), &v1).unwrap();
    let ca = old.tls.ca_cert.unwrap();
    assert_eq!((ca.key(), ca.as_bytes()), (0, b"sealed-ca".as_slice()));
    assert!(old.credentials.iter().all(|c| c.password_for.is_none()));

    // A version 2 secret too short to name its key is refused.
    stored.ca_cert = Some(vec![1, 2]);
    let cut = framed(DATABASE_V2, &stored).unwrap();
    assert!(matches!(
        decode_database(database.id.as_str(), &cut),
        Err(RecordError::Secret)
    ));
}

#[test]
fn seal_keys_round_trip() {
    let keys = SealKeys {
        current: 3,
        keys: [(1, b"one".to_vec()), (3, b"three".to_vec())].into(),
    };
    let bytes = encode_seal_keys(&keys).unwrap();
    assert_eq!(decode_seal_keys(&bytes).unwrap(), keys);
    assert!(matches!(
        decode_seal_keys(&[9]),
        Err(RecordError::UnknownVersion(9))
    ));
}

#[test]
fn a_record_under_another_key_or_of_an_unknown_version_is_refused() {
    let database = sample_database("Orders", None);
    let mut bytes = encode_database(&database).unwrap();
    assert!(matches!(
        decode_database("db_other", &bytes),
        Err(RecordError::KeyMismatch { .. })
    ));
    bytes[0] = 9;
    assert!(matches!(
        decode_database(database.id.as_str(), &bytes),
        Err(RecordError::UnknownVersion(9))
    ));
    assert!(matches!(
        decode_database(database.id.as_str(), &[]),
        Err(RecordError::Empty)
    ));
}

fn access_control() -> AccessControl {
    AccessControl {
        permissions: vec![
            Permission {
                subject_kind: SubjectKind::Group,
                subject: "Payments".to_owned(),
                access: AccessLevel::Review,
            },
            Permission {
                subject_kind: SubjectKind::User,
                subject: "ana@example.com".to_owned(),
                access: AccessLevel::Admin,
            },
        ],
        data_protection: DataProtection {
            inherits_from: Some("db_parent".to_owned()),
            provisioning: Some(crate::model::Provisioning {
                credential: Credential {
                    id: CredentialId::from_stored("crd_provisioning"),
                    username: "owner".to_owned(),
                    password: Some(SealedSecret::new(7, vec![1, 2, 3])),
                    password_for: Some([3; 32]),
                    hostname: None,
                    ai_allowed: false,
                    timeout: None,
                    reviews_required: 0,
                    default_credential: false,
                },
                schemas: vec!["public".to_owned(), "Sales".to_owned()],
                auto_apply: true,
            }),
            policies: vec![Policy {
                name: "pii".to_owned(),
                exempt: vec![crate::model::Exemption {
                    subject_kind: SubjectKind::Group,
                    subject: "auditors".to_owned(),
                }],
                description: Some("Personal data".to_owned()),
                columns: vec![
                    ColumnRule {
                        column: "users.email".to_owned(),
                        action: ColumnAction::Mask,
                        mask: crate::model::Mask {
                            kind: crate::model::MaskKind::Partial,
                            keep_first: 2,
                            keep_last: 1,
                        },
                    },
                    ColumnRule {
                        column: "public.users.ssn".to_owned(),
                        action: ColumnAction::Hide,
                        mask: Default::default(),
                    },
                ],
            }],
        },
    }
}

#[test]
fn access_control_round_trips_under_its_database_id() {
    let access = access_control();
    let bytes = encode_access_control("db_1", &access).unwrap();
    assert_eq!(
        bytes[0], 3,
        "version 3: with provisioning, exemptions and the provisioning password's binding"
    );
    assert_eq!(decode_access_control("db_1", &bytes).unwrap(), access);
    // A version 2 record reads with its provisioning password bound to nothing yet.
    let (_, body) = unframed(&bytes).unwrap();
    let v3: access::AccessControlV2 = postcard::from_bytes(body).unwrap();
    let v2 = access::AccessControlV2::<access::ProvisioningV1> {
        database_id: v3.database_id,
        permissions: v3.permissions,
        inherits_from: v3.inherits_from,
        policies: v3.policies,
        provisioning: v3.provisioning.map(|p| access::ProvisioningV1 {
            credential_id: p.credential_id,
            username: p.username,
            password: p.password,
            schemas: p.schemas,
            auto_apply: p.auto_apply,
        }),
    };
    let read = decode_access_control("db_1", &framed(2, &v2).unwrap()).unwrap();
    let provisioning = read.data_protection.provisioning.expect("kept");
    assert_eq!(
        provisioning.credential.password_for,
        Some(crate::model::HELD),
        "held back until given again"
    );
    assert_eq!(
        provisioning.credential.password,
        access
            .data_protection
            .provisioning
            .as_ref()
            .unwrap()
            .credential
            .password
    );
    // A version 1 record (before masks had kinds, exemptions and provisioning) reads as one
    // with neither.
    let v1 = access::AccessControlV1 {
        database_id: "db_1".to_owned(),
        permissions: Vec::new(),
        inherits_from: None,
        policies: vec![access::PolicyV1 {
            name: "pii".to_owned(),
            description: None,
            columns: vec![("users.email".to_owned(), "mask".to_owned())],
        }],
    };
    let old = decode_access_control("db_1", &framed(RECORD_V1, &v1).unwrap()).unwrap();
    assert_eq!(old.data_protection.provisioning, None);
    assert_eq!(old.data_protection.policies[0].exempt, Vec::new());
    assert_eq!(
        old.data_protection.policies[0].columns[0].mask,
        Mask::default()
    );
    assert!(matches!(
        decode_access_control("db_2", &bytes),
        Err(RecordError::KeyMismatch { .. })
    ));
    let empty = encode_access_control("db_1", &AccessControl::default()).unwrap();
    assert_eq!(
        decode_access_control("db_1", &empty).unwrap(),
        AccessControl::default()
    );
}

#[test]
fn an_unknown_stored_enum_value_is_refused() {
    let mut stored = AccessControlV1 {
        database_id: "db_1".to_owned(),
        permissions: vec![PermissionV1 {
            subject_kind: "user".to_owned(),
            subject: "ana".to_owned(),
            access: "owner".to_owned(),
        }],
        inherits_from: None,
        policies: Vec::new(),
    };
    let bytes = framed(RECORD_V1, &stored).unwrap();
    assert!(matches!(
        decode_access_control("db_1", &bytes),
        Err(RecordError::UnknownValue("access level"))
    ));
    stored.permissions.clear();
    stored.policies.push(PolicyV1 {
        name: "p".to_owned(),
        description: None,
        columns: vec![("t.c".to_owned(), "shred".to_owned())],
    });
    let bytes = framed(RECORD_V1, &stored).unwrap();
    assert!(matches!(
        decode_access_control("db_1", &bytes),
        Err(RecordError::UnknownValue("column action"))
    ));
}

#[test]
fn caller_key_round_trips() {
    let (mut key, _secret) =
        crate::model::mint_caller_key(CredentialKind::AccessToken, Scope::Setup, "ci");
    key.last_used_at = Some(Timestamp::from_micros(1_795_341_845_123_456));
    let bytes = encode_caller_key(&key).unwrap();
    assert_eq!(bytes[0], CALLER_KEY_V2);
    assert_eq!(decode_caller_key(key.id.as_str(), &bytes).unwrap(), key);
    // Bound to a user (an agent key: its scope says so).
    let (mut bound, _) =
        crate::model::mint_caller_key(CredentialKind::ApiKey, Scope::Agent, "agent");
    bound.principal = Some(
        crate::model::Principal::member("a@example.com")
            .groups(["g1", "g2"])
            .agent(true),
    );
    let stored = encode_caller_key(&bound).unwrap();
    assert_eq!(
        decode_caller_key(bound.id.as_str(), &stored).unwrap(),
        bound
    );
    // A version 1 record (before users) reads as a key bound to none.
    let v1 = framed(
        RECORD_V1,
        &CallerKeyV1 {
            id: key.id.as_str().to_owned(),
            name: key.name.clone(),
            kind: key.kind.as_str().to_owned(),
            scope: key.scope.as_str().to_owned(),
            digest: key.digest,
            created_at: key.created_at.as_micros(),
            last_used_at: key.last_used_at.map(Timestamp::as_micros),
        },
    )
    .unwrap();
    assert_eq!(decode_caller_key(key.id.as_str(), &v1).unwrap(), key);
    assert!(matches!(
        decode_caller_key("key_other", &bytes),
        Err(RecordError::KeyMismatch { .. })
    ));
    let mut unknown = bytes.clone();
    unknown[0] = 7;
    assert!(matches!(
        decode_caller_key(key.id.as_str(), &unknown),
        Err(RecordError::UnknownVersion(7))
    ));
}

#[test]
fn queries_keep_their_reviews_and_bypass_and_version_1_queries_have_none() {
    let now = Timestamp::now();
    let query = Query {
        id: QueryId::generate(),
        database_id: "db_1".to_owned(),
        credential_id: "crd_1".to_owned(),
        query: "SELECT 1".to_owned(),
        title: "One, «quoted»".to_owned(),
        description: "for the\nreport".to_owned(),
        limit: 10,
        author: "ann".to_owned(),
        by_agent: true,
        target: Some("ab12".to_owned()),
        status: QueryStatus::Running,
        reviews: vec![
            Review {
                reviewer: "bo".to_owned(),
                decision: Decision::RequestChanges,
                comment: Some("the where clause?".to_owned()),
                at: now,
                revision: 0,
            },
            Review {
                reviewer: "bo".to_owned(),
                decision: Decision::Approve,
                comment: Some("looks fine".to_owned()),
                at: now,
                revision: 1,
            },
        ],
        revision: 1,
        comments: vec![Comment {
            author: "ann".to_owned(),
            text: "added it".to_owned(),
            at: now,
        }],
        saved_query: Some("sq_1".to_owned()),
        params: vec![
            ("since".to_owned(), "2025-01-01".to_owned()),
            ("name".to_owned(), "O'Brien; DROP".to_owned()),
        ],
        bypass: Some(Bypass {
            by: "ann".to_owned(),
            at: now,
            reason: "incident".to_owned(),
            approvals: 1,
            required: 2,
        }),
        run: None,
        inserted_at: now,
        updated_at: now,
    };
    let bytes = encode_query(&query).unwrap();
    assert_eq!(bytes[0], QUERY_V5);
    assert_eq!(decode_query(query.id.as_str(), &bytes).unwrap(), query);

    let QueryV5 { v4, .. } = postcard::from_bytes(&bytes[1..]).unwrap();
    let version_4 = decode_query(query.id.as_str(), &framed(QUERY_V4, &v4).unwrap()).unwrap();
    assert_eq!(
        (
            version_4.saved_query,
            version_4.params.len(),
            version_4.title
        ),
        (None, 0, query.title.clone()),
        "version 4 ran no saved query"
    );
    let QueryV4 { v3, .. } = v4;
    let version_3 = decode_query(query.id.as_str(), &framed(QUERY_V3, &v3).unwrap()).unwrap();
    assert_eq!(
        (
            version_3.title.as_str(),
            version_3.revision,
            version_3.comments.len()
        ),
        ("SELECT 1", 0, 0),
        "version 3 kept no title: its statement is its title"
    );
    assert!(version_3.reviews.iter().all(|r| r.revision == 0));
    let QueryV3 { v2, .. } = v3;
    let version_2 = decode_query(query.id.as_str(), &framed(QUERY_V2, &v2).unwrap()).unwrap();
    assert_eq!(version_2.target, None, "version 2 kept no target");
    assert_eq!(version_2.reviews.len(), query.reviews.len());
    let QueryV2 { query: v1, .. } = v2;
    let old = decode_query(query.id.as_str(), &framed(RECORD_V1, &v1).unwrap()).unwrap();
    assert_eq!((old.reviews.len(), old.bypass), (0, None));
    assert_eq!(old.query, query.query);
    assert!(matches!(
        decode_query("qry_other", &bytes),
        Err(RecordError::KeyMismatch { .. })
    ));
}

#[test]
fn saved_queries_round_trip_with_each_sharing() {
    use crate::model::{SavedQuery, SavedQueryId, Sharing};
    for sharing in [
        Sharing::Author,
        Sharing::Groups(vec!["analysts".to_owned(), "on call".to_owned()]),
        Sharing::Database,
    ] {
        let saved = SavedQuery {
            id: SavedQueryId::generate(),
            name: "<img src=x onerror=alert(1)>".to_owned(),
            description: "weekly".to_owned(),
            query: "SELECT * FROM t WHERE id = ${id}".to_owned(),
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            tags: vec!["growth".to_owned()],
            sharing,
            author: "ann@example.com".to_owned(),
            created_at: Timestamp::from_micros(1),
            updated_at: Timestamp::from_micros(2),
        };
        let bytes = encode_saved_query(&saved).unwrap();
        assert_eq!(
            decode_saved_query(saved.id.as_str(), &bytes).unwrap(),
            saved
        );
        assert!(matches!(
            decode_saved_query("sq_other", &bytes),
            Err(RecordError::KeyMismatch { .. })
        ));
    }
}
