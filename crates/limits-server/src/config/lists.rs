//! `allow`, `deny`, `allow_file` and `deny_file`, per rule and at the top
//! of the file: entries inline, and list files of one entry a line (`#`
//! comments, blank lines skipped), relative to the rules file's folder. A
//! bad inline entry is a problem on its own line of the rules file; a bad
//! entry of a list file names the list file and its line; a list file that
//! cannot be read is a problem on the line that names it.

use super::Problems;
use limits_http::{AccessList, ListKind, Lists};
use serde_spanned::Spanned;
use std::path::Path;

/// The four list fields of a rule or of the file, as TOML gave them.
#[derive(Default)]
pub(super) struct RawLists {
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    pub allow_file: Option<Spanned<String>>,
    pub deny_file: Option<Spanned<String>>,
}

/// The lists of `raw`, each entry checked; list files are read from
/// `folder` (the rules file's).
pub(super) fn lists(raw: RawLists, folder: &Path, p: &mut Problems<'_>) -> Lists {
    let mut lists = Lists::default();
    let kinds = [
        (ListKind::Allow, raw.allow, raw.allow_file),
        (ListKind::Deny, raw.deny, raw.deny_file),
    ];
    for (kind, inline, file) in kinds {
        let list = match kind {
            ListKind::Allow => &mut lists.allow,
            ListKind::Deny => &mut lists.deny,
        };
        let field = kind.as_str();
        for entry in inline.map(Spanned::into_inner).unwrap_or_default() {
            if let Err(e) = list.push(entry.get_ref()) {
                p.add(&entry.span(), format!("{field}: {e}"));
            }
        }
        if let Some(file) = file {
            read_file(&file, folder, field, list, p);
        }
    }
    lists
}

/// Adds the entries of the list file `file` names to `list`.
fn read_file(
    file: &Spanned<String>,
    folder: &Path,
    field: &str,
    list: &mut AccessList,
    p: &mut Problems<'_>,
) {
    let path = folder.join(file.get_ref());
    let shown = path.display();
    let text = match std::fs::read(&path).map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => {
            let problem = format!("{field}_file {shown}: the file is not UTF-8 text");
            return p.add(&file.span(), problem);
        }
        Err(e) => {
            let problem = format!("{field}_file {shown}: cannot read it: {e}");
            return p.add(&file.span(), problem);
        }
    };
    for (n, line) in text.lines().enumerate() {
        let entry = line.split_once('#').map_or(line, |(entry, _)| entry).trim();
        if entry.is_empty() {
            continue;
        }
        if let Err(e) = list.push(entry) {
            p.elsewhere
                .push(format!("{shown}:{}: {field}_file entry {e}", n + 1));
        }
    }
}
