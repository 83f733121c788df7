//! What a running server tells the program that owns it: where it listens,
//! reloads and their outcome, its stop. A library writes nothing to stdout
//! itself; it logs through `tracing` and hands these to the owner's
//! [`Server::on_event`](crate::Server::on_event), which decides what to
//! print (the `limits` command prints one line for each).

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

/// Something a running server did that its owner may want to show.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The admin endpoint (`/metrics`, `/healthz`, `/readyz`) is bound to
    /// `local`.
    Admin {
        /// The address it is bound to (the port chosen when 0 was asked).
        local: SocketAddr,
    },
    /// The main listener is bound to `local` and serves `backend`.
    Listening {
        /// The address it is bound to (the port chosen when 0 was asked).
        local: SocketAddr,
        /// The backend's name ([`Backend`](crate::Backend)).
        backend: String,
    },
    /// The rate limit service's gRPC listener is bound to `local`, with
    /// `limits` limits in force.
    RlsListening {
        /// The address it is bound to (the port chosen when 0 was asked).
        local: SocketAddr,
        /// Limits in the configuration.
        limits: usize,
    },
    /// A reload read the rules file: `rules` rules in force, `kept` of them
    /// with the state they had.
    Reloaded {
        /// Rules now in force.
        rules: usize,
        /// Of them, rules unchanged by the reload, which kept their state.
        kept: usize,
    },
    /// A reload found the rules file bad; the rules in force stay.
    NotReloaded {
        /// What was wrong, naming the file and line.
        error: String,
    },
    /// A reload was asked for (SIGHUP) but the rules come from no file.
    NothingToReload,
    /// The listener has stopped and drained; the state file, if any, was
    /// written (or its error is what [`Server::serve`](crate::Server::serve)
    /// returns).
    Stopped,
}

/// The owner's handler, if it gave one.
#[derive(Default)]
pub(crate) struct Events {
    handler: RwLock<Option<Handler>>,
}

type Handler = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

impl Events {
    /// Replaces the handler.
    pub(crate) fn set(&self, handler: Handler) {
        *self.handler.write().unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }

    /// Hands `event` to the handler, if any.
    pub(crate) fn emit(&self, event: ServerEvent) {
        let handler = self
            .handler
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(handler) = handler {
            handler(&event);
        }
    }
}
