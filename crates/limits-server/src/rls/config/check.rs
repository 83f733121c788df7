//! `limits rls --check-config`: every file of a config read as `limits rls`
//! would read it, and every mistake reported, not only the first, so that
//! one run of a CI check lists all there is to fix (the reference's
//! `config_check_cmd` stops at its first).

use super::{build, load, RlsConfig};
use crate::rls::RlsOptions;
use std::path::{Path, PathBuf};

/// What a config that loads holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Checked {
    /// The files read, in the order `limits rls` reads them.
    pub files: Vec<PathBuf>,
    /// Limits across every domain.
    pub limits: usize,
}

/// Reads every file under `path` (a file, or a directory as
/// [`RlsConfig::load`] reads it); what it holds, or every problem found,
/// each as "FILE:LINE: what is wrong" (a problem of the path itself: "PATH:
/// what is wrong"). A file that does not parse is reported and left out of
/// the checks across files (two files with one domain, one limit id twice).
pub fn check(path: &Path) -> Result<Checked, Vec<String>> {
    check_with(path, &RlsOptions::default())
}

/// As [`check`], reading the files as `options` say (merging the files of
/// one domain with [`RlsOptions::merge_domains`], and checking the
/// descriptor key file if there is one).
pub fn check_with(path: &Path, options: &RlsOptions) -> Result<Checked, Vec<String>> {
    let files = load::config_files(path).map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    let mut config = RlsConfig::default();
    for file in &files {
        let origin = file.display().to_string();
        let domain = std::fs::read_to_string(file)
            .map_err(|e| format!("{origin}: cannot read: {e}"))
            .and_then(|text| build::domain(&text, &origin));
        if let Err(e) = domain.and_then(|d| config.add(d, options.merge_domains)) {
            problems.push(e);
        }
    }
    if let Some(keys) = &options.descriptor_key_config {
        if let Err(e) = super::DescriptorKeys::load(keys) {
            problems.push(e);
        }
    }
    if problems.is_empty() {
        Ok(Checked {
            files,
            limits: config.limits().count(),
        })
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_good_config_is_its_files_and_limits() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: j\n    rate_limit: {unlimited: true}\n");
        let b = write(dir.path(), "b.yml", "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 9}\n");
        let checked = check(dir.path()).unwrap();
        assert_eq!(
            checked,
            Checked {
                files: vec![a, b],
                limits: 3
            }
        );
    }

    #[test]
    fn every_bad_file_is_reported_with_its_line_not_only_the_first() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "1.yaml", "domain: one\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n");
        write(dir.path(), "2.yaml", "domain: two\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
        write(
            dir.path(),
            "3.yaml",
            "domain: two\ndescriptors:\n  - key: \"\"\n",
        );
        write(dir.path(), "4.yaml", "domain: two\ndescriptors: []\n");
        let problems = check(dir.path()).unwrap_err();
        let d = dir.path().display();
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems[0].starts_with(&format!("{d}/1.yaml:4: ")),
            "{}",
            problems[0]
        );
        assert!(problems[0].contains("fortnight"), "{}", problems[0]);
        assert!(
            problems[1].starts_with(&format!("{d}/3.yaml:3: descriptor has empty key")),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].starts_with(&format!("{d}/4.yaml:1: duplicate domain 'two'")),
            "{}",
            problems[2]
        );
    }

    #[test]
    fn a_missing_path_is_named() {
        let problems = check(Path::new("/nonexistent/ratelimit")).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("/nonexistent/ratelimit: "),
            "{problems:?}"
        );
    }
}
