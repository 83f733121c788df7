//! A 429 body handed out again while its seconds repeat is the body made
//! anew: for the same rule with other seconds in between, for rules that
//! share their seconds, and for a rule's pieces made again (a reload).

use super::super::TooManyBody;

#[test]
fn repeated_bodies_are_the_bodies_made_anew() {
    let (a, b) = (TooManyBody::new("a", None), TooManyBody::new("b", None));
    let a_again = TooManyBody::new("a", None);
    let long = TooManyBody::new(&"n".repeat(600), None);
    for secs in [1, 1, 60, 1, 60, 60, 0, u64::MAX, u64::MAX, 1] {
        for body in [&a, &b, &a_again, &long, &a] {
            assert_eq!(body.body(secs), body.write(secs).as_slice(), "{secs}");
        }
        assert_eq!(a.body(secs), a_again.body(secs));
        assert_ne!(a.body(secs), b.body(secs));
    }
    let text = String::from_utf8(b.body(7).to_vec()).unwrap();
    assert!(
        text.contains(r#""rule":"b""#) && text.ends_with(r#""retry_after":7}"#),
        "{text}"
    );
}
