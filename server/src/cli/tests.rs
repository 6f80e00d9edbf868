//! The flags as people type them: parsed, defaulted and refused.

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use dbconsole_core::{CredentialKind, Scope};

use super::serve::SERVE_AFTER_HELP;
use super::*;
use crate::backend::StorageKind;
use crate::credentials::{ACCESS_TOKEN_VAR, API_KEY_VAR};

fn serve_args(args: &[&str]) -> Result<ServeArgs, clap::Error> {
    let cli = Cli::try_parse_from(["dbconsole", "serve"].iter().chain(args))?;
    match cli.command {
        Command::Serve(args) => Ok(args),
        other => panic!("parsed as {other:?}"),
    }
}

fn keys_args(args: &[&str]) -> Result<KeysArgs, clap::Error> {
    let cli = Cli::try_parse_from(["dbconsole", "keys"].iter().chain(args))?;
    match cli.command {
        Command::Keys(args) => Ok(args),
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn flags_parse_into_their_types() {
    let args = serve_args(&[
        "--listen",
        "0.0.0.0:8080",
        "--storage",
        "memory",
        "--data-dir",
        "/var/lib/dbconsole",
        "--check-timeout-secs",
        "3",
    ])
    .unwrap();
    assert_eq!(args.listen, "0.0.0.0:8080");
    assert_eq!(args.storage, StorageKind::Memory);
    assert_eq!(args.data_dir, PathBuf::from("/var/lib/dbconsole"));
    assert_eq!(args.check_timeout(), Duration::from_secs(3));
}

/// The TOML file fills in what neither the command line nor the environment gives.
#[test]
fn a_config_file_fills_in_below_the_command_line_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dbconsole.toml");
    std::fs::write(
        &file,
        "listen = \"0.0.0.0:8443\"\nmax-connections = 64\nstorage = \"memory\"\nlog-format = \"json\"\ndrain-secs = 3\n",
    )
    .unwrap();
    let load = |extra: &[&str], env: &[&str]| {
        let mut args: Vec<std::ffi::OsString> = ["dbconsole", "serve", "--config"]
            .iter()
            .map(Into::into)
            .collect();
        args.push(file.clone().into());
        args.extend(extra.iter().map(Into::into));
        let env: Vec<String> = env.iter().map(|name| (*name).to_owned()).collect();
        Cli::load(args, |name| env.iter().any(|set| set == name))
    };
    let cli = load(&[], &[]).unwrap();
    assert_eq!(cli.log_format, LogFormat::Json);
    let Command::Serve(args) = cli.command else {
        panic!("serve")
    };
    assert_eq!(args.listen, "0.0.0.0:8443");
    assert_eq!(args.max_connections, 64);
    assert_eq!(args.storage, StorageKind::Memory);
    assert_eq!(args.drain_secs, 3);
    assert_eq!(
        args.body_timeout_secs, 30,
        "a default the file leaves alone"
    );

    let Command::Serve(args) = load(&["--listen", "127.0.0.1:1"], &["DBCONSOLE_MAX_CONNECTIONS"])
        .unwrap()
        .command
    else {
        panic!("serve")
    };
    assert_eq!(args.listen, "127.0.0.1:1", "the command line wins");
    assert_eq!(
        args.max_connections, 1024,
        "a variable that is set wins (here unread: the default)"
    );

    std::fs::write(&file, "listne = \"x\"\n").unwrap();
    let error = load(&[], &[]).unwrap_err().to_string();
    assert!(error.contains("unknown setting `listne`"), "{error}");
    std::fs::write(&file, "max-connections = 0\n").unwrap();
    assert!(
        load(&[], &[]).is_err(),
        "file values are checked like flags"
    );
}

#[test]
fn the_read_cache_is_off_on_a_shared_store() {
    let bytes = |args: &[&str]| serve_args(args).unwrap().read_cache_bytes();
    assert_eq!(bytes(&[]), 8 << 20);
    assert_eq!(
        bytes(&["--storage", "memory", "--read-cache-mib", "1"]),
        1 << 20
    );
    assert_eq!(bytes(&["--read-cache-mib", "0"]), 0);
    assert_eq!(bytes(&["--storage", "postgres"]), 0);
}

#[test]
fn bad_values_are_rejected() {
    for bad in [
        &["--listen", "localhost"][..],
        &["--storage", "cassandra"],
        &["--check-timeout-secs", "0"],
        &["--check-timeout-secs", "soon"],
        &["--no-such-flag"],
    ] {
        assert!(serve_args(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn keys_subcommands_parse() {
    let args = keys_args(&[
        "create",
        "--kind",
        "access-token",
        "--scope",
        "setup",
        "--name",
        "ci",
        "--data-dir",
        "/srv/data",
    ])
    .unwrap();
    assert_eq!(args.store.data_dir, PathBuf::from("/srv/data"));
    let KeysCommand::Create(create) = args.command else {
        panic!("{args:?}");
    };
    assert_eq!(create.kind, CredentialKind::AccessToken);
    assert_eq!(create.scope, Scope::Setup);
    assert_eq!(args.store.storage, StorageKind::Redb);
    assert_eq!(create.name, "ci");

    // `--data-dir` may also come before the subcommand.
    let args = keys_args(&["--data-dir", "/srv/other", "revoke", "key_01"]).unwrap();
    assert_eq!(args.store.data_dir, PathBuf::from("/srv/other"));
    assert!(matches!(args.command, KeysCommand::Revoke { id } if id == "key_01"));
    assert!(matches!(
        keys_args(&["list"]).unwrap().command,
        KeysCommand::List
    ));

    // The seal key commands.
    assert!(matches!(
        keys_args(&["rotate-seal"]).unwrap().command,
        KeysCommand::RotateSeal { batch: 100 }
    ));
    assert!(matches!(
        keys_args(&["rotate-seal", "--batch", "5"]).unwrap().command,
        KeysCommand::RotateSeal { batch: 5 }
    ));
    assert!(keys_args(&["rotate-seal", "--batch", "0"]).is_err());
    assert!(matches!(
        keys_args(&["seal-status"]).unwrap().command,
        KeysCommand::SealStatus
    ));
    assert!(matches!(
        keys_args(&["add-seal-key"]).unwrap().command,
        KeysCommand::AddSealKey
    ));

    // `--storage` is `serve`'s, before or after the subcommand.
    for args in [
        &["--storage", "memory", "list"],
        &["list", "--storage", "memory"],
    ] {
        assert_eq!(keys_args(args).unwrap().store.storage, StorageKind::Memory);
    }
}

#[test]
fn kinds_and_scopes_are_offered_by_their_core_names() {
    let command = Cli::command();
    let create = command
        .find_subcommand("keys")
        .and_then(|keys| keys.find_subcommand("create"))
        .unwrap();
    let offered = |flag: &str| -> Vec<String> {
        let arg = create
            .get_arguments()
            .find(|arg| arg.get_id() == flag)
            .unwrap();
        arg.get_possible_values()
            .iter()
            .map(|value| value.get_name().to_owned())
            .collect()
    };
    assert_eq!(
        offered("kind"),
        CredentialKind::ALL.map(CredentialKind::as_str)
    );
    assert_eq!(offered("scope"), Scope::ALL.map(Scope::as_str));
    for kind in CredentialKind::ALL {
        for scope in Scope::ALL {
            let args = keys_args(&[
                "create",
                "--kind",
                kind.as_str(),
                "--scope",
                scope.as_str(),
                "--name",
                "x",
            ])
            .unwrap();
            let KeysCommand::Create(create) = args.command else {
                panic!("{args:?}");
            };
            assert_eq!((create.kind, create.scope), (kind, scope));
        }
    }
}

#[test]
fn bad_keys_commands_are_rejected() {
    for bad in [
        &["create", "--kind", "api-key", "--scope", "full"][..],
        &[
            "create", "--kind", "password", "--scope", "full", "--name", "x",
        ],
        &[
            "create", "--kind", "api-key", "--scope", "admin", "--name", "x",
        ],
        &["create", "--kind", "api-key", "--name", "x"],
        &["revoke"],
        &["list", "extra"],
        &["--storage", "cassandra", "list"],
        &[],
    ] {
        assert!(keys_args(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn help_names_the_credential_variables() {
    assert!(SERVE_AFTER_HELP.contains(API_KEY_VAR));
    assert!(SERVE_AFTER_HELP.contains(ACCESS_TOKEN_VAR));
}

#[test]
fn sessions_are_capped_at_ten_per_user_by_default_and_the_door_is_off() {
    let args = serve_args(&[]).unwrap();
    let options = args.session_options().unwrap();
    assert_eq!(options.max_per_user, 10);
    assert!(args.door_listen.is_none());
    let door = args.door_options(None);
    assert_eq!(door.address, None, "no door, no address");
    assert_eq!(door.max_per_user, 10);
    assert_eq!(door.max_per_credential, 50);
    assert_eq!(door.max_password_lifetime.as_secs(), 90 * 24 * 3600);
    let bound: std::net::SocketAddr = "127.0.0.1:4432".parse().unwrap();
    assert_eq!(
        args.door_options(Some(bound)).address.as_deref(),
        Some("localhost:4432"),
        "a loopback door is shown as localhost"
    );
    let public = serve_args(&["--public-url", "https://console.example.com"]).unwrap();
    assert_eq!(
        public.door_options(Some(bound)).address.as_deref(),
        Some("console.example.com:4432"),
        "the public URL's host with the door's port"
    );
    let given = serve_args(&["--door-address", "pg.example.com:6432"]).unwrap();
    assert_eq!(
        given.door_options(Some(bound)).address.as_deref(),
        Some("pg.example.com:6432")
    );
}
