//! Listing filters: a filtered listing keeps exactly the records the filter matches (the rule
//! of [`DatabaseFilter::matches`]), in id order, in keyset pages, and follows every write: an
//! update that moves a record out of (or into) a filter, a setup, a delete.

use crate::storage::Edits as _;
use std::sync::Arc;

use super::check::ok;
use super::fixtures::{plain_dashboard, plain_database};
use super::origin;
use crate::model::{Adapter, Dashboard, Database};
use crate::storage::{DashboardFilter, DatabaseFilter, DatabaseKey, Page, Storage};

/// Every database `filter` keeps, read in pages of 2.
async fn paged(storage: &dyn Storage, filter: DatabaseFilter<'_>) -> Vec<Database> {
    let mut all = Vec::new();
    loop {
        let after = all.last().map(|db: &Database| db.id.as_str().to_owned());
        let page = Page {
            after: after.as_deref(),
            limit: 2,
        };
        let found = ok(storage.list_databases(page, filter).await, "list_databases");
        let done = found.len() < 2;
        all.extend(found);
        if done {
            return all;
        }
    }
}

/// Every dashboard `filter` keeps, read in pages of 2.
async fn paged_dashboards(storage: &dyn Storage, filter: DashboardFilter<'_>) -> Vec<Dashboard> {
    let mut all = Vec::new();
    loop {
        let after = all.last().map(|d: &Dashboard| d.id.as_str().to_owned());
        let page = Page {
            after: after.as_deref(),
            limit: 2,
        };
        let found = ok(
            storage.list_dashboards(page, filter).await,
            "list_dashboards",
        );
        let done = found.len() < 2;
        all.extend(found);
        if done {
            return all;
        }
    }
}

/// A database with these fields.
fn database(
    name: &str,
    adapter: Adapter,
    group: Option<&str>,
    tunnel: Option<&str>,
    api_id: Option<&str>,
) -> Database {
    let mut database = plain_database(name, api_id);
    database.adapter = adapter;
    database.group = group.map(str::to_owned);
    database.tunnel_id = tunnel.map(str::to_owned);
    database
}

/// Each filter, alone and combined, keeps exactly the matching databases in id order; `after`
/// and `limit` page through them.
pub async fn database_filters_keep_exactly_the_matches(storage: Arc<dyn Storage>) {
    use Adapter::{Clickhouse, Mysql, Postgres};
    let records = [
        database("orders-eu", Postgres, Some("prod"), None, Some("ext-1")),
        database("orders-us", Postgres, Some("prod"), Some("tun-a"), None),
        database(
            "Orders-archive",
            Mysql,
            Some("archive"),
            None,
            Some("ext-2"),
        ),
        database("events", Clickhouse, Some("prod"), Some("tun-a"), None),
        database(
            "events-staging",
            Clickhouse,
            Some("staging"),
            Some("tun-b"),
            None,
        ),
        database("ordersx", Mysql, None, None, None),
        database("billing", Postgres, Some("prod"), None, Some("ext-3")),
        database("order", Postgres, Some("prod"), Some("tun-a"), None),
    ];
    for record in &records {
        ok(
            storage.insert_database(record.clone(), origin()).await,
            "insert_database",
        );
    }
    let filters = [
        DatabaseFilter {
            adapter: Some(Postgres),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            group: Some("prod"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            name_prefix: Some("orders"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            name_prefix: Some("Orders"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            api_id: Some("ext-2"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            tunnel_id: Some("tun-a"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            adapter: Some(Postgres),
            group: Some("prod"),
            tunnel_id: Some("tun-a"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            adapter: Some(Clickhouse),
            name_prefix: Some("events"),
            group: Some("staging"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            api_id: Some("ext-1"),
            group: Some("archive"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            group: Some("nobody"),
            ..DatabaseFilter::default()
        },
        DatabaseFilter {
            adapter: Some(Adapter::Oracle),
            ..DatabaseFilter::default()
        },
        DatabaseFilter::default(),
    ];
    let mut sorted = records.to_vec();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    for filter in filters {
        let expected: Vec<Database> = sorted
            .iter()
            .filter(|db| filter.matches(db))
            .cloned()
            .collect();
        assert_eq!(
            paged(storage.as_ref(), filter).await,
            expected,
            "listing with {filter:?}"
        );
    }
    // Sanity of the rule itself: the expected sets are the ones meant.
    let names = |filter| {
        let mut names: Vec<String> = sorted
            .iter()
            .filter(|db| DatabaseFilter::matches(&filter, db))
            .map(|db| db.name.clone())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(DatabaseFilter {
            name_prefix: Some("orders"),
            ..DatabaseFilter::default()
        }),
        ["orders-eu", "orders-us", "ordersx"]
    );
    // `after` any string.
    let prod = DatabaseFilter {
        group: Some("prod"),
        ..DatabaseFilter::default()
    };
    let all_prod = paged(storage.as_ref(), prod).await;
    let second = all_prod[1].id.as_str().to_owned();
    let rest = ok(
        storage
            .list_databases(
                Page {
                    after: Some(&second),
                    limit: 100,
                },
                prod,
            )
            .await,
        "list_databases",
    );
    assert_eq!(rest, all_prod[2..]);
    let none = ok(
        storage
            .list_databases(
                Page {
                    after: Some("~"),
                    limit: 100,
                },
                prod,
            )
            .await,
        "list_databases",
    );
    assert!(none.is_empty());
}

/// A filter follows the writes: an update moves a database between groups, names, adapters and
/// tunnels; a setup moves it; a delete takes it out of every filter.
pub async fn database_filters_follow_every_write(storage: Arc<dyn Storage>) {
    let moving = database(
        "alpha",
        Adapter::Postgres,
        Some("blue"),
        Some("tun-1"),
        None,
    );
    let id = moving.id.as_str().to_owned();
    ok(
        storage.insert_database(moving, origin()).await,
        "insert_database",
    );
    let by_group = |group| DatabaseFilter {
        group: Some(group),
        ..DatabaseFilter::default()
    };
    let by_name = |prefix| DatabaseFilter {
        name_prefix: Some(prefix),
        ..DatabaseFilter::default()
    };
    let by_tunnel = |tunnel| DatabaseFilter {
        tunnel_id: Some(tunnel),
        ..DatabaseFilter::default()
    };
    let by_adapter = |adapter| DatabaseFilter {
        adapter: Some(adapter),
        ..DatabaseFilter::default()
    };
    let ids = |found: Vec<Database>| -> Vec<String> {
        found
            .into_iter()
            .map(|db| db.id.as_str().to_owned())
            .collect()
    };
    assert_eq!(
        ids(paged(storage.as_ref(), by_group("blue")).await),
        std::slice::from_ref(&id)
    );
    ok(
        storage
            .update_database(
                &id,
                Box::new(|stored: &Database| {
                    let mut next = stored.clone();
                    next.group = Some("green".to_owned());
                    next.name = "beta".to_owned();
                    next.tunnel_id = None;
                    next.adapter = Adapter::Mysql;
                    Ok(next)
                }),
                origin(),
            )
            .await,
        "update_database",
    );
    let storage = storage.as_ref();
    assert!(paged(storage, by_group("blue")).await.is_empty());
    assert!(paged(storage, by_name("al")).await.is_empty());
    assert!(paged(storage, by_tunnel("tun-1")).await.is_empty());
    assert!(
        paged(storage, by_adapter(Adapter::Postgres))
            .await
            .is_empty()
    );
    for filter in [by_group("green"), by_name("be"), by_adapter(Adapter::Mysql)] {
        assert_eq!(
            ids(paged(storage, filter).await),
            std::slice::from_ref(&id),
            "{filter:?}"
        );
    }

    let set_up = database("gamma", Adapter::Oracle, Some("red"), None, Some("ext-g"));
    let setup_id = set_up.id.as_str().to_owned();
    ok(
        storage
            .upsert_database_by_api_id(
                "ext-g",
                Box::new(move |_: Option<&Database>| Ok(set_up.clone())),
                origin(),
            )
            .await,
        "upsert_database_by_api_id",
    );
    ok(
        storage
            .upsert_database_by_api_id(
                "ext-g",
                Box::new(|stored: Option<&Database>| {
                    let mut next = stored.expect("stored").clone();
                    next.group = Some("green".to_owned());
                    Ok(next)
                }),
                origin(),
            )
            .await,
        "upsert_database_by_api_id",
    );
    assert!(paged(storage, by_group("red")).await.is_empty());
    let mut green = vec![id.clone(), setup_id.clone()];
    green.sort();
    assert_eq!(ids(paged(storage, by_group("green")).await), green);
    let by_api_id = DatabaseFilter {
        api_id: Some("ext-g"),
        ..DatabaseFilter::default()
    };
    assert_eq!(
        ids(paged(storage, by_api_id).await),
        std::slice::from_ref(&setup_id)
    );

    for key in [DatabaseKey::Id(&id), DatabaseKey::ApiId("ext-g")] {
        ok(
            storage.delete_database(key, None, origin()).await,
            "delete_database",
        );
    }
    for filter in [
        by_group("green"),
        by_name("be"),
        by_name("ga"),
        by_adapter(Adapter::Mysql),
        by_adapter(Adapter::Oracle),
        by_api_id,
    ] {
        assert!(paged(storage, filter).await.is_empty(), "{filter:?}");
    }
}

/// `name_prefix` on dashboards: exactly the matches, in id order, following renames and
/// deletes.
pub async fn dashboard_name_prefix_keeps_the_matches(storage: Arc<dyn Storage>) {
    let mut ids = Vec::new();
    for name in ["Ops", "Ops EU", "ops", "Sales", "Opsx"] {
        let dashboard = plain_dashboard(name);
        ids.push((name, dashboard.id.as_str().to_owned()));
        ok(
            storage.insert_dashboard(dashboard, origin()).await,
            "insert_dashboard",
        );
    }
    let prefix = |prefix| DashboardFilter {
        name_prefix: Some(prefix),
    };
    let names =
        |found: Vec<Dashboard>| -> Vec<String> { found.into_iter().map(|d| d.name).collect() };
    let storage = storage.as_ref();
    assert_eq!(
        names(paged_dashboards(storage, prefix("Ops")).await),
        ["Ops", "Ops EU", "Opsx"]
    );
    assert_eq!(
        names(paged_dashboards(storage, prefix("ops")).await),
        ["ops"]
    );
    assert_eq!(
        paged_dashboards(storage, DashboardFilter::default())
            .await
            .len(),
        5
    );
    let sales = ids[3].1.clone();
    ok(
        storage
            .update_dashboard(
                &sales,
                Box::new(|stored: &Dashboard| {
                    let mut next = stored.clone();
                    next.name = "Ops sales".to_owned();
                    Ok(next)
                }),
                origin(),
            )
            .await,
        "update_dashboard",
    );
    assert_eq!(
        names(paged_dashboards(storage, prefix("Ops ")).await),
        ["Ops EU", "Ops sales"]
    );
    assert!(paged_dashboards(storage, prefix("Sa")).await.is_empty());
    ok(
        storage.delete_dashboard(&ids[1].1, None, origin()).await,
        "delete_dashboard",
    );
    assert_eq!(
        names(paged_dashboards(storage, prefix("Ops ")).await),
        ["Ops sales"]
    );
}
