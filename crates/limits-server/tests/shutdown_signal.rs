//! `shutdown_signal` installs its handlers when called. Regression: it used to
//! install them on first poll, so a SIGTERM sent right after `limits serve`
//! said it listened could kill the process by the default action, without a
//! drain or the state saved (seen as exit -1 in a state-file test).
//! Its own test binary: it signals its own process.

use std::time::Duration;

#[cfg(unix)]
#[tokio::test]
async fn a_sigterm_before_the_first_poll_completes_the_future_instead_of_killing_the_process() {
    let shutdown = limits_server::shutdown_signal();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Give the signal time to arrive before anything polls `shutdown`.
    std::thread::sleep(Duration::from_millis(200));
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("the SIGTERM completes the shutdown future");
}
