//! A rule's real cost from the upstream's response ([`CostFrom`]): a
//! request is charged its declared estimate on arrival, then settled to
//! what the response's header says (the LLM gateway's tokens per minute).

use http::header::{HeaderMap, HeaderName};

/// Where a rule reads a request's real cost once its response head
/// arrives: a header of the upstream's response, a decimal whole number,
/// at most `max`. The request is decided and counted at the rule's
/// [`cost`](crate::HttpRule::cost) when it arrives (the estimate, so that
/// nothing in flight can pass the limit), then settled to the real cost
/// ([`Store::settle`](limits::Store::settle)): the difference refunded, or
/// the rest charged, as a debt the next requests wait for if it does not
/// fit. A missing or unreadable header leaves the estimate. The header is
/// removed from the response before the client sees it.
///
/// ```
/// use http::HeaderMap;
/// use limits_http::CostFrom;
///
/// let tokens = CostFrom::header("x-tokens-used", 10_000).unwrap();
/// let mut headers = HeaderMap::new();
/// assert_eq!(tokens.read(&headers), None);
/// headers.insert("x-tokens-used", "1234".parse().unwrap());
/// assert_eq!(tokens.read(&headers), Some(1234));
/// headers.insert("x-tokens-used", "99999".parse().unwrap());
/// assert_eq!(tokens.read(&headers), Some(10_000), "at most max");
/// headers.insert("x-tokens-used", "12 tokens".parse().unwrap());
/// assert_eq!(tokens.read(&headers), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostFrom {
    /// The response header holding the real cost.
    pub header: HeaderName,
    /// The most one request is settled to, whatever the header says.
    pub max: u64,
}

impl CostFrom {
    /// The real cost from the response header `name`, at most `max`; an
    /// error if `name` is not a header name.
    pub fn header(name: &str, max: u64) -> Result<CostFrom, http::header::InvalidHeaderName> {
        Ok(CostFrom {
            header: HeaderName::try_from(name)?,
            max,
        })
    }

    /// The real cost `headers` give, at most `max`: `None` when the header
    /// is missing, sent twice, or not a decimal whole number.
    pub fn read(&self, headers: &HeaderMap) -> Option<u64> {
        let mut values = headers.get_all(&self.header).iter();
        let value = values.next()?;
        if values.next().is_some() {
            return None;
        }
        let text = value.to_str().ok()?.trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // All digits: only too large to parse, which is above any max.
        Some(text.parse::<u64>().unwrap_or(u64::MAX).min(self.max))
    }
}
