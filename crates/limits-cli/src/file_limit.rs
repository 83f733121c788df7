//! The process's file limit, raised at start to the most it may be: every
//! connection, upstream connection and file is a descriptor, and a server
//! that runs out of them can accept nothing, its admin listener included.
//! Many systems start services with a soft limit of 1,024 under a hard limit
//! hundreds of times larger (systemd's default: 1,024 and 524,288), so the
//! soft limit is raised to the hard one, as nginx's `worker_rlimit_nofile`,
//! Go (since 1.19) and the JVM do. The connection caps are then sized to fit
//! what the limit is (`limits_server::connections_within_file_limit`).

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (or, where the hard
/// limit is unlimited, to the most the kernel allows one process: Linux's
/// `fs.nr_open`); returns the soft limit in force afterwards, or None where
/// it cannot be read. A raise the system refuses is logged, and the limit
/// in force returned.
#[cfg(unix)]
pub fn raise() -> Option<u64> {
    let (soft, hard) = read()?;
    let target = if hard == libc::RLIM_INFINITY {
        most_per_process().unwrap_or(soft)
    } else {
        hard
    };
    if soft >= target {
        return Some(soft);
    }
    let wanted = libc::rlimit {
        rlim_cur: target,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct we own and keeps no pointer to it.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } != 0 {
        let e = std::io::Error::last_os_error();
        tracing::warn!(soft, target, error = %e, "could not raise the file limit");
        return Some(soft);
    }
    read().map(|(soft, _)| soft)
}

/// Where there are no resource limits, none is known.
#[cfg(not(unix))]
pub fn raise() -> Option<u64> {
    None
}

/// The soft and hard `RLIMIT_NOFILE`.
#[cfg(unix)]
pub fn read() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own and keeps no pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    Some((limit.rlim_cur, limit.rlim_max))
}

/// The most descriptors the kernel lets one process have, when the hard
/// limit says "unlimited" (Linux: `fs.nr_open`; elsewhere unknown, and the
/// soft limit is left as it is).
#[cfg(unix)]
fn most_per_process() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn raise_sets_the_soft_file_limit_to_the_hard_limit() {
        let (_, hard) = read().expect("getrlimit");
        let target = if hard == libc::RLIM_INFINITY {
            most_per_process().expect("fs.nr_open")
        } else {
            hard
        };
        // Lowered by one first (harmless to the tests beside this one), so
        // that the raise has something to do even where it was done before.
        let lowered = libc::rlimit {
            rlim_cur: target - 1,
            rlim_max: hard,
        };
        // SAFETY: as in `raise`.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        assert_eq!(read().map(|(soft, _)| soft), Some(target - 1));
        assert_eq!(raise(), Some(target));
        assert_eq!(read(), Some((target, hard)), "read back with getrlimit");
        assert_eq!(raise(), Some(target), "a second raise changes nothing");
    }
}
