//! The files a rules file names (`allow_file`, `deny_file`, `tier_file`):
//! read relative to the rules file's folder, one entry a line, `#`
//! comments and blank lines skipped. A file that cannot be read is a
//! problem on the line of the rules file that names it.

use super::Problems;
use serde_spanned::Spanned;
use std::path::Path;

/// The file `file` names (as shown in problems) and its text; None, its
/// problem added on `field`'s line, if it cannot be read or is not UTF-8.
pub(super) fn read(
    file: &Spanned<String>,
    folder: &Path,
    field: &str,
    p: &mut Problems<'_>,
) -> Option<(String, String)> {
    let path = folder.join(file.get_ref());
    let shown = path.display().to_string();
    match std::fs::read(&path).map(String::from_utf8) {
        Ok(Ok(text)) => Some((shown, text)),
        Ok(Err(_)) => {
            p.add(
                &file.span(),
                format!("{field} {shown}: the file is not UTF-8 text"),
            );
            None
        }
        Err(e) => {
            p.add(
                &file.span(),
                format!("{field} {shown}: cannot read it: {e}"),
            );
            None
        }
    }
}

/// The entries of `text`, each with its 1-based line: comments cut, white
/// space trimmed, blank lines skipped.
pub(super) fn entries(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(n, line)| {
        let entry = line.split_once('#').map_or(line, |(entry, _)| entry).trim();
        (!entry.is_empty()).then_some((n + 1, entry))
    })
}
