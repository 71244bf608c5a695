//! Checking TOML values against declared parameter kinds, and the small
//! helpers every loader shares (typed table access, "did you mean").

use ccsim_kernel::component::{ParamKind, ParamSpec, ParamValue};
use toml::Value;

/// A short rendering of a TOML value for error messages: strings quoted,
/// numbers and booleans as written, containers by kind.
pub fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Integer(i) => i.to_string(),
        Value::Float(x) => format_float(*x),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => d.to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Table(_) => "a table".to_string(),
    }
}

/// Formats a float so that integral values keep a trailing `.0`.
pub fn format_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Converts `value` to the kind `spec` declares and checks it against the
/// declared range. The error is the message only (`expected integer, got
/// "x"`, `must be at least 1, got 0`); the caller adds file and path.
pub fn check_param(spec: &ParamSpec, value: &Value) -> Result<ParamValue, String> {
    let v = check_kind(spec, value)?;
    let x = match &v {
        ParamValue::Int(i) => *i as f64,
        ParamValue::Float(x) => *x,
        ParamValue::Bool(_) | ParamValue::Str(_) => return Ok(v),
    };
    match spec.range.violation(x) {
        None => Ok(v),
        Some(rule) => Err(format!("{rule}, got {}", describe(value))),
    }
}

/// Converts `value` to the kind `spec` declares.
fn check_kind(spec: &ParamSpec, value: &Value) -> Result<ParamValue, String> {
    let got = || format!("expected {}, got {}", spec.kind, describe(value));
    match (spec.kind, value) {
        (ParamKind::Int, Value::Integer(i)) => Ok(ParamValue::Int(*i)),
        (ParamKind::Float, Value::Integer(i)) => Ok(ParamValue::Float(*i as f64)),
        (ParamKind::Float, Value::Float(x)) if x.is_finite() => Ok(ParamValue::Float(*x)),
        (ParamKind::Bool, Value::Boolean(b)) => Ok(ParamValue::Bool(*b)),
        (ParamKind::Str, Value::String(s)) => Ok(ParamValue::Str(s.clone())),
        (ParamKind::Enum(options), Value::String(s)) => {
            if options.contains(&s.as_str()) {
                Ok(ParamValue::Str(s.clone()))
            } else {
                Err(got())
            }
        }
        _ => Err(got()),
    }
}

/// Converts an already typed value (from Python or Rust) to the kind `spec`
/// declares; integers widen to numbers, nothing else converts.
pub fn check_typed(spec: &ParamSpec, value: &ParamValue) -> Result<ParamValue, String> {
    let toml_value = match value {
        ParamValue::Int(i) => Value::Integer(*i),
        ParamValue::Float(x) => Value::Float(*x),
        ParamValue::Bool(b) => Value::Boolean(*b),
        ParamValue::Str(s) => Value::String(s.clone()),
    };
    check_param(spec, &toml_value)
}

/// Parses command-line text (`--set pcie.lanes=8`) as the kind `spec`
/// declares.
pub fn parse_text(spec: &ParamSpec, text: &str) -> Result<ParamValue, String> {
    let t = text.trim();
    let value = match spec.kind {
        ParamKind::Int => t.parse::<i64>().map(Value::Integer).ok(),
        // An integer stays one, so messages show the value as typed.
        ParamKind::Float => t
            .parse::<i64>()
            .map(Value::Integer)
            .or_else(|_| t.parse::<f64>().map(Value::Float))
            .ok(),
        ParamKind::Bool => match t {
            "true" => Some(Value::Boolean(true)),
            "false" => Some(Value::Boolean(false)),
            _ => None,
        },
        ParamKind::Str | ParamKind::Enum(_) => Some(Value::String(t.to_string())),
    };
    let value = value.unwrap_or_else(|| Value::String(t.to_string()));
    check_param(spec, &value)
}

/// Edit distance between two short names, for "did you mean" hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `; did you mean "lanes"?` when a known name is close to `wrong`, and a
/// list of the known names otherwise.
pub fn suggest<'a>(wrong: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    let best = known
        .iter()
        // A prefix ("lat" for "latency_ns") counts as close.
        .map(|k| {
            (
                if wrong.len() >= 3 && (k.starts_with(wrong) || wrong.starts_with(k)) {
                    1
                } else {
                    distance(wrong, k)
                },
                *k,
            )
        })
        .min_by_key(|(d, k)| (*d, *k));
    match best {
        Some((d, k)) if d <= 2.max(wrong.len() / 3) => format!("; did you mean {k:?}?"),
        _ if known.is_empty() => String::new(),
        _ => format!(" (known: {})", known.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_pick_the_closest_name() {
        assert_eq!(
            suggest("lanez", ["generation", "lanes"]),
            "; did you mean \"lanes\"?"
        );
        assert_eq!(suggest("zzzzzz", ["a", "b"]), " (known: a, b)");
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn floats_render_with_a_fraction() {
        assert_eq!(format_float(8.0), "8.0");
        assert_eq!(format_float(2.5), "2.5");
    }
}
