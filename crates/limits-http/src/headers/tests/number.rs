//! The numbers of the RateLimit values are written as `Display` writes them:
//! around every power of ten, and the largest.

use super::super::Buf;

#[test]
fn a_number_is_written_as_display_writes_it() {
    let mut numbers = vec![0, 12345, 100_000_000, u64::MAX - 1, u64::MAX];
    let mut p = 1u64;
    while let Some(next) = p.checked_mul(10) {
        numbers.extend([p - 1, p, p + 1]);
        p = next;
    }
    numbers.extend([p - 1, p, p + 1]);
    for n in numbers {
        let mut buf = Buf::default();
        buf.0.extend_from_slice(b"x=");
        buf.number(n);
        assert_eq!(std::str::from_utf8(&buf.0).unwrap(), format!("x={n}"));
    }
}
