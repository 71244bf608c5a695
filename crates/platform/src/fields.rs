//! Typed, path-aware access to one TOML table. Every key read is marked as
//! known; [`Fields::finish`] then rejects the keys nobody read, so a misspelt
//! key is an error at every level of every file.

use crate::error::{ConfigError, Result};
use crate::value::{describe, suggest};
use std::collections::BTreeSet;
use toml::{Table, Value};

/// Joins a dotted path and a key.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// One table being read, with the file and path used in errors.
pub struct Fields<'a> {
    pub file: &'a str,
    pub path: String,
    pub table: &'a Table,
    read: BTreeSet<String>,
}

impl<'a> Fields<'a> {
    pub fn new(file: &'a str, path: impl Into<String>, table: &'a Table) -> Self {
        Self {
            file,
            path: path.into(),
            table,
            read: BTreeSet::new(),
        }
    }

    /// Like [`Fields::new`], first rejecting keys not in `known`: a
    /// misspelt required key is reported as unknown (with a hint) rather
    /// than as missing.
    pub fn with_keys(
        file: &'a str,
        path: impl Into<String>,
        table: &'a Table,
        known: &[&str],
    ) -> Result<Self> {
        let f = Self::new(file, path, table);
        for key in table.keys() {
            if !known.contains(&key.as_str()) {
                let hint = suggest(key, known.iter().copied());
                return Err(f.err(key, format!("unknown key{hint}")));
            }
        }
        Ok(f)
    }

    /// An error at `key` of this table.
    pub fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::new(self.file, join(&self.path, key), message)
    }

    /// The raw value of `key`, marking it known.
    pub fn get(&mut self, key: &str) -> Option<&'a Value> {
        self.read.insert(key.to_string());
        self.table.get(key)
    }

    fn expected(&self, key: &str, what: &str, v: &Value) -> ConfigError {
        self.err(key, format!("expected {what}, got {}", describe(v)))
    }

    pub fn opt_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.expected(key, "string", v)),
        }
    }

    pub fn req_str(&mut self, key: &str) -> Result<String> {
        self.opt_str(key)?
            .ok_or_else(|| self.err(key, "required key missing"))
    }

    pub fn opt_bool(&mut self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.expected(key, "boolean", v)),
        }
    }

    pub fn opt_f64(&mut self, key: &str) -> Result<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(Value::Float(x)) if x.is_finite() => Ok(Some(*x)),
            Some(v) => Err(self.expected(key, "number", v)),
        }
    }

    pub fn req_f64(&mut self, key: &str) -> Result<f64> {
        self.opt_f64(key)?
            .ok_or_else(|| self.err(key, "required key missing"))
    }

    pub fn opt_table(&mut self, key: &str) -> Result<Option<&'a Table>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(self.expected(key, "table", v)),
        }
    }

    pub fn req_table(&mut self, key: &str) -> Result<&'a Table> {
        self.opt_table(key)?
            .ok_or_else(|| self.err(key, "required table missing"))
    }

    pub fn opt_array(&mut self, key: &str) -> Result<Option<&'a Vec<Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.expected(key, "array", v)),
        }
    }

    /// A non-empty array of numbers.
    pub fn numbers(&mut self, key: &str) -> Result<Option<Vec<f64>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            match v {
                Value::Integer(n) => out.push(*n as f64),
                Value::Float(x) if x.is_finite() => out.push(*x),
                _ => {
                    return Err(self.err(
                        &format!("{key}[{i}]"),
                        format!("expected number, got {}", describe(v)),
                    ))
                }
            }
        }
        if out.is_empty() {
            return Err(self.err(key, "must not be empty"));
        }
        Ok(Some(out))
    }

    /// A string or an array of strings, as a list.
    pub fn strings(&mut self, key: &str) -> Result<Vec<String>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(self.err(
                        &format!("{key}[{i}]"),
                        format!("expected string, got {}", describe(v)),
                    )),
                })
                .collect(),
            Some(v) => Err(self.expected(key, "string or array of strings", v)),
        }
    }

    /// Rejects every key of the table that was not read.
    pub fn finish(self) -> Result<()> {
        for key in self.table.keys() {
            if !self.read.contains(key) {
                let hint = suggest(key, self.read.iter().map(String::as_str));
                return Err(self.err(key, format!("unknown key{hint}")));
            }
        }
        Ok(())
    }
}
