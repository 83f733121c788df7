//! Flag values checked beyond their type: a value that parses but would
//! make the server limit nothing, or nobody, is refused or said out loud.

/// `--max-keys`: at least 1.
pub fn parse_max_keys(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1: with no key tracked, nothing could be limited".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (a whole number of keys, at least 1)")),
    }
}

/// Says loudly when a `--trust-proxy` network has prefix length 0: every
/// peer is then a trusted proxy, so every client chooses its own address
/// (and so its own limit) with X-Forwarded-For or Forwarded.
pub fn warn_trust_everyone(networks: &[String]) {
    for net in networks {
        if net
            .trim()
            .parse::<ipnet::IpNet>()
            .is_ok_and(|n| n.prefix_len() == 0)
        {
            tracing::warn!(
                network = %net,
                "--trust-proxy trusts every peer: any client can choose its address"
            );
            eprintln!(
                "limits serve: WARNING: --trust-proxy {net} trusts every peer: every client can \
                 choose its address with X-Forwarded-For or Forwarded, and so its own limit; \
                 list only your proxies' networks"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_keys_zero_is_refused_with_a_reason() {
        assert!(parse_max_keys("0").unwrap_err().contains("at least 1"));
        assert!(parse_max_keys("-1").unwrap_err().contains("at least 1"));
        assert_eq!(parse_max_keys("1000"), Ok(1000));
    }
}
