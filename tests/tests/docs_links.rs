//! The manual's links hold: every relative link between the README and `docs/*.md` names a
//! file that exists and, where it has an anchor, a heading of that file (as GitHub makes its
//! anchors); every code fence names its language (a fence in a page the crate docs include
//! becomes a doctest when it names none). rustdoc checks only intra-doc links, so this is the
//! check of the rest.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// What one Markdown page holds: its anchors, its links (with the line each is on) and its
/// code blocks without a language (by line).
#[derive(Debug, Default)]
struct Page {
    anchors: Vec<String>,
    links: Vec<(usize, String)>,
    bare_fences: Vec<usize>,
}

/// GitHub's anchor of a heading: lowercase, spaces become `-`, every character but letters,
/// digits, `-` and `_` dropped; a repeated anchor gets `-1`, `-2`…
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn read_page(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut page = Page::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) if heading.is_some() => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let count = seen.entry(base.clone()).or_insert(0);
                let anchor = if *count == 0 {
                    base.clone()
                } else {
                    format!("{base}-{count}")
                };
                *count += 1;
                page.anchors.push(anchor);
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                page.links
                    .push((line_of(range.start), dest_url.to_string()));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let named = matches!(&kind, CodeBlockKind::Fenced(lang) if !lang.trim().is_empty());
                if !named {
                    page.bare_fences.push(line_of(range.start));
                }
            }
            _ => {}
        }
    }
    page
}

/// Every broken link and bare fence of `pages` (path → text), one line each.
fn problems(pages: &BTreeMap<PathBuf, String>, exists: impl Fn(&Path) -> bool) -> Vec<String> {
    let read: BTreeMap<&PathBuf, Page> = pages.iter().map(|(p, t)| (p, read_page(t))).collect();
    let mut problems = Vec::new();
    for (path, page) in &read {
        let dir = path.parent().unwrap_or(Path::new(""));
        for line in &page.bare_fences {
            problems.push(format!(
                "{}:{line}: a code fence without a language",
                path.display()
            ));
        }
        for (line, link) in &page.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match link.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                (*path).clone()
            } else {
                normalize(&dir.join(file))
            };
            if !file.is_empty() && !pages.contains_key(&target) && !exists(&target) {
                problems.push(format!("{}:{line}: {link}: no such file", path.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                match read.get(&target) {
                    Some(linked) if linked.anchors.iter().any(|a| a == anchor) => {}
                    Some(_) => problems.push(format!(
                        "{}:{line}: {link}: no heading with that anchor",
                        path.display()
                    )),
                    None => problems.push(format!(
                        "{}:{line}: {link}: an anchor into a file that is not a checked page",
                        path.display()
                    )),
                }
            }
        }
    }
    problems
}

/// `a/b/../c` as `a/c`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_link_of_the_readme_and_the_manual_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = BTreeMap::new();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    pages.insert(PathBuf::from("README.md"), readme);
    let docs = std::fs::read_dir(root.join("docs")).expect("the docs/ folder");
    for entry in docs {
        let name = entry.expect("a docs entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") {
            let path = PathBuf::from("docs").join(name.as_ref());
            let text = std::fs::read_to_string(root.join(&path)).expect("a docs page");
            pages.insert(path, text);
        }
    }
    assert!(
        pages.len() >= 7,
        "the README and six pages at least: {pages:?}"
    );
    let links: usize = pages.values().map(|t| read_page(t).links.len()).sum();
    assert!(links > 100, "the pages link to each other: {links} links");
    let found = problems(&pages, |path| root.join(path).exists());
    assert!(found.is_empty(), "broken:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_a_broken_anchor_a_missing_file_and_a_bare_fence() {
    let mut pages = BTreeMap::new();
    pages.insert(
        PathBuf::from("README.md"),
        "# Top\n\n## AI agents (MCP)\n\n[ok](#ai-agents-mcp) [ok](docs/a.md#how-its-done) \
         [bad](#nowhere) [gone](docs/missing.md)\n\n```\nbare\n```\n"
            .to_owned(),
    );
    pages.insert(
        PathBuf::from("docs/a.md"),
        "# A\n\n## How it's done\n\n[back](../README.md#top) [bad](../README.md#ai-agents)\n\n```sh\nok\n```\n"
            .to_owned(),
    );
    let found = problems(&pages, |_| false);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("README.md:7: a code fence"), "{found:#?}");
    assert!(found.iter().any(|p| p.contains("#nowhere")));
    assert!(
        found
            .iter()
            .any(|p| p.contains("docs/missing.md: no such file"))
    );
    assert!(
        found
            .iter()
            .any(|p| p.contains("../README.md#ai-agents: no heading"))
    );
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(
        slug("How it can't be bypassed (MySQL, MariaDB)"),
        "how-it-cant-be-bypassed-mysql-mariadb"
    );
    assert_eq!(
        slug("Delivery: at least once, never twice at once"),
        "delivery-at-least-once-never-twice-at-once"
    );
    assert_eq!(slug("`dbconsole keys`"), "dbconsole-keys");
}
