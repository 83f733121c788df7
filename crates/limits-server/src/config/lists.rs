//! `allow`, `deny`, `allow_file` and `deny_file`, per rule and at the top
//! of the file: entries inline, and list files ([`files`]). A bad inline
//! entry is a problem on its own line of the rules file; a bad entry of a
//! list file names the list file and its line.

use super::{files, Problems};
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
    let Some((shown, text)) = files::read(file, folder, &format!("{field}_file"), p) else {
        return;
    };
    for (line, entry) in files::entries(&text) {
        if let Err(e) = list.push(entry) {
            p.elsewhere
                .push(format!("{shown}:{line}: {field}_file entry {e}"));
        }
    }
}
