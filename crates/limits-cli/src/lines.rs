//! The lines `limits serve` and `limits rls` print on stdout as their
//! server reports what it does: where it listens (scripts and tests read
//! the address from it), the admin address, each reload's outcome, the
//! stop. The server library prints nothing itself; the command decides what
//! its user sees.

use limits_server::ServerEvent;

/// The command whose server reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `limits serve`: rules in front of an HTTP backend.
    Serve,
    /// `limits rls`: limits behind Envoy's rate limit protocol.
    Rls,
}

impl Command {
    fn name(self) -> &'static str {
        match self {
            Command::Serve => "serve",
            Command::Rls => "rls",
        }
    }

    /// What its configuration holds, as its own docs call them.
    fn entries(self) -> &'static str {
        match self {
            Command::Serve => "rules",
            Command::Rls => "limits",
        }
    }
}

/// The stdout line for `event` from `command`'s server, if it has one.
pub fn line(command: Command, event: &ServerEvent) -> Option<String> {
    let (name, entries) = (command.name(), command.entries());
    let what = match event {
        ServerEvent::Admin { local } => format!("admin on http://{local}/metrics"),
        ServerEvent::Listening { local, backend } => {
            format!("listening on http://{local} in front of {backend}")
        }
        // A bare address, as Envoy's cluster configuration takes it.
        ServerEvent::RlsListening { local, limits } => {
            format!("listening on {local} ({limits} limits)")
        }
        ServerEvent::Reloaded { rules, kept } => {
            format!("config reloaded ({rules} {entries}, {kept} kept their state)")
        }
        ServerEvent::NotReloaded { error } => format!("config not reloaded: {error}"),
        ServerEvent::NothingToReload => "SIGHUP: no --config to reload; still serving".to_string(),
        ServerEvent::Stopped => "stopped".to_string(),
        // A later kind of event: the logs say it.
        _ => return None,
    };
    Some(format!("limits {name}: {what}"))
}

/// A handler printing `command`'s lines on stdout.
pub fn printer(command: Command) -> impl Fn(&ServerEvent) + Send + Sync + 'static {
    move |event| {
        if let Some(line) = line(command, event) {
            println!("{line}");
        }
    }
}
