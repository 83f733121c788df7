//! One line of an nginx/Apache combined (or common) access log:
//! `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 ...`

use chrono::DateTime;

/// The (Unix-epoch nanoseconds, client address) of one log line.
pub fn parse_access_line(line: &str) -> Result<(u64, String), String> {
    let (host, rest) = line
        .split_once(' ')
        .ok_or_else(|| "not an access log line: expected the client address first".to_string())?;
    if host.is_empty() {
        return Err("not an access log line: the client address is empty".to_string());
    }
    let open = rest
        .find('[')
        .ok_or_else(|| "no [timestamp] after the client address".to_string())?;
    let close = rest[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or_else(|| "the [timestamp is not closed with ]".to_string())?;
    let stamp = &rest[open + 1..close];
    let time = DateTime::parse_from_str(stamp, "%d/%b/%Y:%H:%M:%S%.f %z").map_err(|e| {
        format!("timestamp [{stamp}] is not like [10/Oct/2000:13:55:36 -0700]: {e}")
    })?;
    let nanos = time
        .timestamp_nanos_opt()
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| {
            format!("timestamp [{stamp}] is out of range (before 1970 or after 2262)")
        })?;
    Ok((nanos, host.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_line_gives_client_and_utc_time() {
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08""#;
        let (t, key) = parse_access_line(line).unwrap();
        assert_eq!(key, "127.0.0.1");
        assert_eq!(t, 971_211_336 * 1_000_000_000);
    }

    #[test]
    fn ipv6_and_fractional_seconds() {
        let line = r#"2001:db8::1 - - [01/Jan/2024:00:00:00.250 +0000] "GET / HTTP/2.0" 200 1"#;
        let (t, key) = parse_access_line(line).unwrap();
        assert_eq!(key, "2001:db8::1");
        assert_eq!(t, 1_704_067_200_250_000_000);
    }

    #[test]
    fn broken_lines_say_what_is_wrong() {
        assert!(parse_access_line("garbage")
            .unwrap_err()
            .contains("client address"));
        assert!(parse_access_line("1.2.3.4 - - no time")
            .unwrap_err()
            .contains("[timestamp]"));
        assert!(parse_access_line("1.2.3.4 - - [10/Oct/2000:13:55:36 -0700")
            .unwrap_err()
            .contains("not closed"));
        assert!(
            parse_access_line("1.2.3.4 - - [31/Foo/2000:13:55:36 -0700] \"GET /\"")
                .unwrap_err()
                .contains("not like")
        );
        assert!(
            parse_access_line("1.2.3.4 - - [10/Oct/1960:13:55:36 +0000] \"GET /\"")
                .unwrap_err()
                .contains("out of range")
        );
    }
}
