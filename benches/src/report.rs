//! The table printed at the end of a benchmark run: each benchmark's typical time and its
//! ratio to the two baselines measured in the same run.
//!
//! Criterion writes each benchmark's estimates to
//! `<criterion dir>/<group>/<bench>/new/estimates.json`. The criterion directory is found the
//! way criterion finds it (`$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the
//! target directory from `cargo metadata`, else `target/criterion`). Only estimates written
//! during this run are used, so a filtered run shows only what it measured, and a run in test
//! mode (`cargo test --benches`) shows nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

/// The baselines, as `(group, bench)`.
pub const BASELINES: [(&str, &str); 2] = [
    ("baseline", "unknown_route_404"),
    ("baseline", "json_parse_body"),
];

/// One benchmark's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// `group/bench`.
    pub name: String,
    /// Typical time of one iteration, in nanoseconds: criterion's slope estimate when it has
    /// one (linear sampling), else the mean.
    pub nanos: f64,
}

/// The directory criterion writes to, found as criterion finds it.
pub fn criterion_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let from_metadata = std::env::var_os("CARGO").and_then(|cargo| {
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .ok()?;
        let metadata: Value = serde_json::from_slice(&output.stdout).ok()?;
        metadata["target_directory"].as_str().map(PathBuf::from)
    });
    from_metadata
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The result of `group/bench`, when criterion wrote it at or after `since`.
pub fn read(directory: &Path, group: &str, bench: &str, since: SystemTime) -> Option<Measured> {
    let path = directory
        .join(group)
        .join(bench)
        .join("new")
        .join("estimates.json");
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    if modified < since {
        return None;
    }
    let estimates: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    let nanos = estimates["slope"]["point_estimate"]
        .as_f64()
        .or_else(|| estimates["mean"]["point_estimate"].as_f64())?;
    Some(Measured {
        name: format!("{group}/{bench}"),
        nanos,
    })
}

/// A time in the unit that suits it.
pub fn format_nanos(nanos: f64) -> String {
    if nanos >= 1e6 {
        format!("{:.2} ms", nanos / 1e6)
    } else if nanos >= 1e3 {
        format!("{:.2} µs", nanos / 1e3)
    } else {
        format!("{nanos:.1} ns")
    }
}

/// The table: one line per benchmark, its time and its ratio to each baseline measured.
pub fn table(baselines: &[Measured], results: &[Measured]) -> String {
    let mut out = String::from("\nratios to the baselines of this run (time of one iteration):\n");
    out.push_str(&format!("{:<36} {:>12}", "benchmark", "time"));
    for baseline in baselines {
        out.push_str(&format!(" {:>30}", format!("x {}", baseline.name)));
    }
    out.push('\n');
    for result in baselines.iter().chain(results) {
        out.push_str(&format!(
            "{:<36} {:>12}",
            result.name,
            format_nanos(result.nanos)
        ));
        for baseline in baselines {
            out.push_str(&format!(" {:>30.2}", result.nanos / baseline.nanos));
        }
        out.push('\n');
    }
    out
}

/// Prints the table for the benchmarks `(group, bench)` measured since `since`. Prints nothing
/// when no baseline was measured in this run.
pub fn print_ratios(benches: &[(&str, &str)], since: SystemTime) {
    let directory = criterion_directory();
    let measured = |(group, bench): &(&str, &str)| read(&directory, group, bench, since);
    let baselines: Vec<Measured> = BASELINES.iter().filter_map(measured).collect();
    if baselines.is_empty() {
        return;
    }
    let results: Vec<Measured> = benches
        .iter()
        .filter(|bench| !BASELINES.contains(bench))
        .filter_map(measured)
        .collect();
    print!("{}", table(&baselines, &results));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_slope_of_a_fresh_estimate_only() {
        let directory =
            std::env::temp_dir().join(format!("dbconsole-report-{}", std::process::id()));
        let new = directory.join("g").join("b").join("new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(
            new.join("estimates.json"),
            r#"{"mean":{"point_estimate":300.0},"slope":{"point_estimate":250.0}}"#,
        )
        .unwrap();
        let before = SystemTime::UNIX_EPOCH;
        let measured = read(&directory, "g", "b", before).unwrap();
        assert_eq!(measured.name, "g/b");
        assert_eq!(measured.nanos, 250.0);
        let later = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert_eq!(read(&directory, "g", "b", later), None);
        assert_eq!(read(&directory, "g", "missing", before), None);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn table_divides_by_each_baseline() {
        let m = |name: &str, nanos| Measured {
            name: name.to_owned(),
            nanos,
        };
        let text = table(
            &[m("baseline/a", 100.0), m("baseline/b", 50.0)],
            &[m("x/y", 1000.0)],
        );
        let line = text.lines().find(|l| l.starts_with("x/y")).unwrap();
        let numbers: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(numbers, ["x/y", "1.00", "µs", "10.00", "20.00"]);
        assert_eq!(format_nanos(12.34), "12.3 ns");
        assert_eq!(format_nanos(2.5e6), "2.50 ms");
    }
}
