//! The storage backends the server can run on, one variant and one `match` arm each.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use clap::ValueEnum;
use dbconsole_core::Storage;
use dbconsole_storage_memory::MemoryStorage;

/// The error of [`StorageKind::open`]: the backend's own error, shown to the operator.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

/// A storage backend, chosen with `--storage` / `DBCONSOLE_STORAGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageKind {
    /// Everything in memory: fast, and nothing survives the process.
    Memory,
}

impl StorageKind {
    /// The name the flag takes (`memory`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StorageKind::Memory => "memory",
        }
    }

    /// Opens the backend. `data_dir` is where backends that keep files put them; `memory`
    /// ignores it.
    pub fn open(self, data_dir: &Path) -> Result<Arc<dyn Storage>, OpenError> {
        match self {
            StorageKind::Memory => {
                let _ = data_dir;
                Ok(Arc::new(MemoryStorage::new()))
            }
        }
    }
}

impl fmt::Display for StorageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_as_its_flag_value() {
        for kind in StorageKind::value_variants() {
            let flag = kind.to_possible_value().expect("no variant is skipped");
            assert_eq!(flag.get_name(), kind.as_str());
            assert_eq!(StorageKind::from_str(kind.as_str(), false), Ok(*kind));
        }
    }

    #[tokio::test]
    async fn memory_opens_an_empty_store() {
        let storage = StorageKind::Memory
            .open(Path::new("/nonexistent/never/created"))
            .expect("memory always opens");
        let page = dbconsole_core::storage::Page {
            after: None,
            limit: 10,
        };
        assert!(storage.list_databases(page).await.unwrap().is_empty());
    }
}
