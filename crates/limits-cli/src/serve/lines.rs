//! The lines `limits serve` prints on stdout as its server reports what it
//! does: where it listens (scripts and tests read the address from it), the
//! admin address, each reload's outcome, the stop. The server library
//! prints nothing itself; the command decides what its user sees.

use limits_server::ServerEvent;

/// The stdout line for `event`, if it has one.
pub fn line(event: &ServerEvent) -> Option<String> {
    Some(match event {
        ServerEvent::Admin { local } => format!("limits serve: admin on http://{local}/metrics"),
        ServerEvent::Listening { local, backend } => {
            format!("limits serve: listening on http://{local} in front of {backend}")
        }
        ServerEvent::Reloaded { rules, kept } => {
            format!("limits serve: config reloaded ({rules} rules, {kept} kept their state)")
        }
        ServerEvent::NotReloaded { error } => {
            format!("limits serve: config not reloaded: {error}")
        }
        ServerEvent::NothingToReload => {
            "limits serve: SIGHUP: no --config to reload; still serving".to_string()
        }
        ServerEvent::Stopped => "limits serve: stopped".to_string(),
        // A later kind of event: the logs say it.
        _ => return None,
    })
}

/// Prints `event`'s line on stdout.
pub fn print(event: &ServerEvent) {
    if let Some(line) = line(event) {
        println!("{line}");
    }
}
