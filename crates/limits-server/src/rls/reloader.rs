//! What reloads a running rate limit service's configuration: SIGHUP, the
//! watch of the config path, and an embedder all reload through it.

use super::fingerprint::Fingerprint;
use super::limits::RlsLimits;
use super::RlsServerConfig;
use crate::events::{Events, ServerEvent};
use arc_swap::ArcSwap;
use std::sync::{Arc, Mutex};

/// Reloads a running server's configuration, for an embedder (SIGHUP and
/// the watch of the config path do the same for a server owning its
/// process).
#[derive(Clone)]
pub struct RlsReloader {
    pub(super) config: RlsServerConfig,
    pub(super) limits: Arc<ArcSwap<RlsLimits>>,
    /// The fingerprint of the files last loaded (or last failing to load);
    /// held during a reload, so that reloads never overlap.
    pub(super) loaded: Arc<Mutex<Fingerprint>>,
    pub(super) events: Arc<Events>,
    /// Whether health answers SERVING (see `RlsLimits::healthy_under`).
    pub(super) healthy: Arc<tokio::sync::watch::Sender<bool>>,
}

impl RlsReloader {
    /// Re-reads the configuration: unchanged limits keep their stores (and
    /// counts); a bad configuration keeps the old limits. Returns (limits,
    /// kept) or the error, which it also reports as an event.
    pub fn reload(&self) -> Result<(usize, usize), String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        *loaded = Fingerprint::of(&self.config.config);
        self.load()
    }

    /// Reloads as [`reload`](Self::reload) does if the files changed (paths,
    /// sizes, mtimes, identities) since the last reload or attempt; `None`
    /// when nothing changed. A bad file is thus reported once per change.
    pub fn reload_if_changed(&self) -> Option<Result<(usize, usize), String>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let now = Fingerprint::of(&self.config.config);
        if now == *loaded {
            return None;
        }
        *loaded = now;
        Some(self.load())
    }

    /// Loads the files and swaps them in, or says why not.
    fn load(&self) -> Result<(usize, usize), String> {
        match RlsLimits::load(
            &self.config.config,
            &self.config.options,
            &self.config.stores,
        ) {
            Ok(mut fresh) => {
                self.healthy
                    .send_replace(fresh.healthy_under(&self.config.options));
                let kept = fresh.keep_state(&self.limits.load());
                let count = fresh.config.limits().count();
                self.limits.store(Arc::new(fresh));
                tracing::info!(limits = count, kept, "config reloaded");
                self.events
                    .emit(ServerEvent::Reloaded { rules: count, kept });
                Ok((count, kept))
            }
            Err(e) => {
                tracing::error!(error = %e, "config not reloaded; keeping the old limits");
                self.events
                    .emit(ServerEvent::NotReloaded { error: e.clone() });
                Err(e)
            }
        }
    }
}
