//! The static bodies of the demo API are what `json!` serialized per
//! request before they were written out.

use super::{INDEX, ITEMS, ITEMS_BODY};
use serde_json::{json, Value};

#[test]
fn the_index_body_is_the_json_it_replaced() {
    let built = json!({
        "service": "limits demo API",
        "endpoints": ["GET /api/items", "GET /api/items/{id}", "POST /login"],
        "headers": "every response carries RateLimit-Policy and RateLimit; a 429 adds Retry-After",
    });
    assert_eq!(INDEX, serde_json::to_string(&built).unwrap());
}

#[test]
fn the_items_body_is_the_json_it_replaced() {
    let list: Vec<Value> = ITEMS
        .iter()
        .enumerate()
        .map(|(id, name)| json!({ "id": id + 1, "name": name }))
        .collect();
    let built = json!({ "items": list });
    assert_eq!(ITEMS_BODY, serde_json::to_string(&built).unwrap());
}
