//! One measured figure: the unit every benchmark emits. `--json` prints one
//! record per line as `{"bench":..,"case":..,"impl":..,"metric":..,"value":..,"unit":..}`.

/// A single measured value (a median over repetitions unless the metric says otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The benchmark family, e.g. "pingpong".
    pub bench: String,
    /// The case inside it, e.g. "round_trip" or "64B".
    pub case: String,
    /// The implementation measured, e.g. "manycore-poll", "crossbeam-channel".
    pub impl_: String,
    /// What was measured, e.g. "median", "p99", "throughput".
    pub metric: String,
    /// The figure.
    pub value: f64,
    /// Its unit, e.g. "ns", "Mmsg/s", "ms/s".
    pub unit: String,
}

impl Record {
    /// Builds a record.
    pub fn new(bench: &str, case: &str, impl_: &str, metric: &str, value: f64, unit: &str) -> Self {
        Self {
            bench: bench.into(),
            case: case.into(),
            impl_: impl_.into(),
            metric: metric.into(),
            value,
            unit: unit.into(),
        }
    }

    /// The record as one line of JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        let v = if self.value.is_finite() {
            format!("{}", self.value)
        } else {
            "null".into()
        };
        format!(
            "{{\"bench\":{},\"case\":{},\"impl\":{},\"metric\":{},\"value\":{},\"unit\":{}}}",
            json_str(&self.bench),
            json_str(&self.case),
            json_str(&self.impl_),
            json_str(&self.metric),
            v,
            json_str(&self.unit)
        )
    }
}

/// A JSON string literal for `s`.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn json_line() {
        let r = Record::new("pingpong", "rt", "a\"b", "median", 1.5, "ns");
        assert_eq!(
            r.to_json(),
            r#"{"bench":"pingpong","case":"rt","impl":"a\"b","metric":"median","value":1.5,"unit":"ns"}"#
        );
    }
}
