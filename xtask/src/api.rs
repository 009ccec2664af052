//! `cargo xtask api`: the facade's API, read from its rustdoc pages.
//!
//! The facade (`crates/lithify`) is built with each of its features alone
//! (`db`, `log`) and with neither, and two of its rules are checked:
//!
//! 1. **Every type in a public signature can be named from the facade.**
//!    rustdoc links a type in a signature to the facade's page when the
//!    facade exports it, and to the internal crate's page
//!    (`../lithify_engine/...`) when it does not. So any link from a
//!    declaration or a signature header of a facade page into a
//!    `lithify_*` crate is a type a user meets and cannot name. (The
//!    implementor lists of traits are skipped: an internal type
//!    implementing a facade trait is not in a facade signature.)
//! 2. **No item is exported twice.** Each item page links to its source;
//!    two facade pages with the same source link are one item at two
//!    paths.
//!
//! The docs are built with `cargo doc -p lithify` (dependencies included,
//! so that rustdoc writes the links of rule 1) into `target/doc`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::{Result, cargo, root, run};

pub(crate) fn api() -> Result {
    // Each half of the facade builds alone, as its README offers, and so
    // does the facade with neither (the vfs, the clock and the error).
    for features in ["db", "log", "bucket", "cluster", ""] {
        run(cargo().args([
            "check",
            "-q",
            "-p",
            "lithify",
            "--no-default-features",
            "--features",
            features,
        ]))?;
    }
    // The workspace's target directory: the dependencies' metadata that
    // clippy built is reused. A broken or private doc link is an error.
    // rustdoc leaves the pages of items no longer exported in place, so
    // the facade's pages are removed first.
    let docs = root().join("target/doc/lithify");
    if docs.exists() {
        std::fs::remove_dir_all(&docs).map_err(|e| format!("removing {}: {e}", docs.display()))?;
    }
    run(cargo()
        .args(["doc", "-q", "-p", "lithify"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    let mut pages = Vec::new();
    collect_pages(&docs, &mut pages)?;
    let mut unnameable: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut by_source: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for page in &pages {
        let text = fs::read_to_string(page).map_err(|e| format!("{}: {e}", page.display()))?;
        let rel = page
            .strip_prefix(&docs)
            .unwrap_or(page)
            .display()
            .to_string();
        for target in internal_links_in_signatures(&text) {
            unnameable.entry(target).or_default().insert(rel.clone());
        }
        if is_item_page(page)
            && let Some(source) = source_link(&text)
        {
            by_source.entry(source).or_default().push(rel);
        }
    }
    let twice: Vec<_> = by_source.iter().filter(|(_, v)| v.len() > 1).collect();
    let mut problems = Vec::new();
    for (target, pages) in &unnameable {
        let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
        problems.push(format!(
            "not nameable from the facade: {target} (in {})",
            pages.join(", ")
        ));
    }
    for (source, paths) in twice {
        problems.push(format!(
            "exported twice: {} (both {source})",
            paths.join(" and ")
        ));
    }
    eprintln!(
        "xtask: api: {} facade pages, {} items",
        pages.len(),
        by_source.len()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the facade's API breaks its rules:\n  {}",
            problems.join("\n  ")
        ))
    }
}

fn collect_pages(dir: &Path, out: &mut Vec<PathBuf>) -> Result {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect_pages(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    out.sort();
    Ok(())
}

/// Whether `page` documents one item (not a module index or an
/// all-items list).
fn is_item_page(page: &Path) -> bool {
    let name = page
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    [
        "struct.",
        "enum.",
        "trait.",
        "fn.",
        "type.",
        "constant.",
        "macro.",
        "union.",
        "static.",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The parts of `text` between `open` and `close`, in order.
fn sections<'a>(text: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else { break };
        out.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    out
}

/// The `lithify_*` crates' pages that declarations and signature headers
/// of this page link to, as paths under the doc root.
fn internal_links_in_signatures(text: &str) -> Vec<String> {
    // Implementor lists name other crates' types implementing a trait.
    let text = ["<h2 id=\"implementors\"", "<h2 id=\"foreign-impls\""]
        .iter()
        .filter_map(|h| text.find(h))
        .min()
        .map_or(text, |at| &text[..at]);
    let mut blocks = sections(text, "<pre class=\"rust item-decl\">", "</pre>");
    blocks.extend(sections(text, "<h4 class=\"code-header\">", "</h4>"));
    blocks.extend(sections(text, "<h3 class=\"code-header\">", "</h3>"));
    let mut out = Vec::new();
    for block in blocks {
        for href in sections(block, "href=\"", "\"") {
            let path = href.trim_start_matches("../");
            if path.starts_with("lithify_") {
                out.push(path.split('#').next().unwrap_or(path).to_string());
            }
        }
    }
    out
}

/// The source link of an item page (`src/<crate>/<file>.html#<lines>`).
fn source_link(text: &str) -> Option<String> {
    for href in sections(text, "href=\"", "\"") {
        let path = href.trim_start_matches("../");
        if path.starts_with("src/") && href.starts_with("../") {
            return Some(path.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_from_signatures_count_and_implementor_lists_do_not() {
        let page = r#"<pre class="rust item-decl"><code>pub fn f() -&gt; <a href="../lithify_engine/struct.Hidden.html">Hidden</a></code></pre>
<p>See <a href="../lithify_engine/struct.Prose.html">prose links</a>.</p>
<h4 class="code-header">pub fn g(x: <a href="struct.Named.html">Named</a>, y: <a href="../../lithify_vfs/trait.Leaked.html#method.m">Leaked</a>)</h4>
<h2 id="implementors" class="section-header">Implementors</h2>
<h3 class="code-header">impl Classify for <a href="../lithify_wal/enum.Error.html">Error</a></h3>"#;
        assert_eq!(
            internal_links_in_signatures(page),
            [
                "lithify_engine/struct.Hidden.html",
                "lithify_vfs/trait.Leaked.html"
            ]
        );
    }

    #[test]
    fn the_source_link_identifies_an_item() {
        let page = r#"<a href="../lithify/index.html">up</a><a class="src" href="../../src/lithify_engine/db.rs.html#40-90">Source</a>"#;
        assert_eq!(
            source_link(page).as_deref(),
            Some("src/lithify_engine/db.rs.html#40-90")
        );
        assert!(is_item_page(Path::new("log/struct.Log.html")));
        assert!(!is_item_page(Path::new("log/index.html")));
    }
}
