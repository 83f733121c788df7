//! The empty request body the listener hands over in place of hyper's: it
//! ends at once, says so, and is taken by axum without another box.

mod call;

use super::NoBody;
use http_body::Body as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt;

#[tokio::test(flavor = "current_thread")]
async fn the_empty_body_ends_at_once_with_no_data_and_no_trailers() {
    let body = axum::body::Body::new(UnsyncBoxBody::new(NoBody));
    assert!(body.is_end_stream());
    assert_eq!(body.size_hint().exact(), Some(0));
    let collected = body.collect().await.unwrap();
    assert!(collected.trailers().is_none());
    assert!(collected.to_bytes().is_empty());
}

#[test]
fn the_empty_body_is_zero_sized_so_its_box_allocates_nothing() {
    assert_eq!(std::mem::size_of::<NoBody>(), 0);
}
