//! The JSON line format of records: one object per line with exactly the six
//! keys, strings escaped, non-finite values as `null`.

use manycore_cli::record::Record;
use serde_json::Value;

fn parse(line: &str) -> serde_json::Map<String, Value> {
    assert!(!line.contains('\n'), "one line: {line}");
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => m,
        other => panic!("not a JSON object: {line}: {other:?}"),
    }
}

#[test]
fn six_keys_in_order() {
    let r = Record::new(
        "pingpong",
        "round_trip",
        "manycore-poll",
        "median",
        1234.5,
        "ns",
    );
    let line = r.to_json();
    assert_eq!(
        line,
        r#"{"bench":"pingpong","case":"round_trip","impl":"manycore-poll","metric":"median","value":1234.5,"unit":"ns"}"#
    );
    let m = parse(&line);
    let keys: Vec<&str> = m.keys().map(String::as_str).collect();
    let mut want = vec!["bench", "case", "impl", "metric", "value", "unit"];
    want.sort();
    let mut got = keys.clone();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(m["value"].as_f64(), Some(1234.5));
}

#[test]
fn escaping_and_odd_values() {
    let r = Record::new("b\"x", "c\\d", "tab\there", "line\nbreak", f64::NAN, "µs");
    let m = parse(&r.to_json());
    assert_eq!(m["bench"], "b\"x");
    assert_eq!(m["case"], "c\\d");
    assert_eq!(m["impl"], "tab\there");
    assert_eq!(m["metric"], "line\nbreak");
    assert_eq!(m["unit"], "µs");
    assert!(m["value"].is_null());
    for v in [f64::INFINITY, f64::NEG_INFINITY] {
        assert!(parse(&Record::new("a", "b", "c", "d", v, "u").to_json())["value"].is_null());
    }
    for v in [0.0, -1.5, 1e-9, 3.0e12, 7.0] {
        let m = parse(&Record::new("a", "b", "c", "d", v, "u").to_json());
        assert_eq!(m["value"].as_f64(), Some(v));
    }
}
