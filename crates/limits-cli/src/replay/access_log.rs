//! One line of an nginx/Apache combined (or common) access log:
//! `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 ...`

use chrono::DateTime;

/// One log line: its time (Unix-epoch nanoseconds), its client address,
/// and the path it asked for (the request target up to its query; `None`
/// for a request line that names none, such as `"-"`).
#[derive(Debug)]
pub struct AccessLine<'a> {
    pub t: u64,
    pub client: &'a str,
    pub path: Option<&'a str>,
}

/// One log line, read.
pub fn parse_access_line(line: &str) -> Result<AccessLine<'_>, String> {
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
    // `"GET /path?query HTTP/1.1"`: the target, the request line's second word.
    let path = rest[close + 1..]
        .split_once('"')
        .and_then(|(_, request)| request.split(['"', ' ']).nth(1))
        .map(|target| target.split_once('?').map_or(target, |(path, _)| path))
        .filter(|path| path.starts_with('/'));
    Ok(AccessLine {
        t: nanos,
        client: host,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_line_gives_client_and_utc_time() {
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08""#;
        let read = parse_access_line(line).unwrap();
        assert_eq!(read.client, "127.0.0.1");
        assert_eq!(read.t, 971_211_336 * 1_000_000_000);
        assert_eq!(read.path, Some("/apache_pb.gif"));
    }

    #[test]
    fn ipv6_and_fractional_seconds() {
        let line = r#"2001:db8::1 - - [01/Jan/2024:00:00:00.250 +0000] "GET / HTTP/2.0" 200 1"#;
        let read = parse_access_line(line).unwrap();
        assert_eq!(read.client, "2001:db8::1");
        assert_eq!(read.t, 1_704_067_200_250_000_000);
    }

    #[test]
    fn the_path_is_the_targets_without_its_query() {
        let at = |request: &str| {
            let line = format!("192.0.2.1 - - [01/Jan/2024:00:00:00 +0000] {request} 200 1");
            parse_access_line(&line).unwrap().path.map(str::to_string)
        };
        assert_eq!(
            at("\"GET /p/1?sort=asc HTTP/1.1\"").as_deref(),
            Some("/p/1")
        );
        assert_eq!(at("\"POST /login HTTP/2.0\"").as_deref(), Some("/login"));
        assert_eq!(at("\"-\""), None, "no request line");
        assert_eq!(
            at("\"\\x16\\x03\\x01\""),
            None,
            "a TLS hello on the plain port"
        );
        assert_eq!(
            at("\"GET http://example.com/ HTTP/1.1\""),
            None,
            "a proxy request"
        );
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
