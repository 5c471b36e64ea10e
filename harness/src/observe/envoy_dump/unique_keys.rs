//! A JSON document with a key twice in one object is refused, wherever the object is: serde's
//! derived structs refuse a repeated field they read, but skip a repeated field they do not
//! (and Envoy, protobuf's JSON reader, `jq` and Python disagree about which of two values
//! counts). One streaming pass over the bytes, before they are decoded; nothing is allocated
//! per value, and a key is copied only when it holds an escape.
//!
//! (YAML needs no pass of its own: serde-saphyr refuses duplicate keys by default.)

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A key twice in one object: the object's path (`configs[0].active_state`; empty at the top)
/// and the key, with serde_json's error (which carries the line and column).
pub(super) struct Duplicate {
    pub path: String,
    pub error: serde_json::Error,
}

/// `Err` at the first object holding a key twice. A document that is not JSON passes: the
/// decoder reports that with its own words.
pub(super) fn check(bytes: &[u8]) -> Result<(), Duplicate> {
    let trail = RefCell::new(Trail::default());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match (Walk { trail: &trail }).deserialize(&mut de) {
        Ok(()) => Ok(()),
        Err(error) => {
            let t = trail.into_inner();
            if !t.duplicate {
                return Ok(());
            }
            // Segments were pushed innermost first, on the way out.
            let path: String = t.segments.iter().rev().map(String::as_str).collect();
            Err(Duplicate { path: path.trim_start_matches('.').to_string(), error })
        }
    }
}

#[derive(Default)]
struct Trail {
    duplicate: bool,
    segments: Vec<String>,
}

#[derive(Clone, Copy)]
struct Walk<'a> {
    trail: &'a RefCell<Trail>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(())) => i += 1,
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.trail.borrow_mut().segments.push(format!("[{i}]"));
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Objects are small; a linear scan beats hashing until they are not.
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        let mut set: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key_seed(Key)? {
            let again = match &set {
                Some(s) => s.contains(&key),
                None => seen.contains(&key),
            };
            if again {
                self.trail.borrow_mut().duplicate = true;
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            if let Err(e) = map.next_value_seed(self) {
                self.trail.borrow_mut().segments.push(format!(".{key}"));
                return Err(e);
            }
            match &mut set {
                Some(s) => {
                    s.insert(key);
                }
                None if seen.len() < 32 => seen.push(key),
                None => set = Some(std::mem::take(&mut seen).into_iter().chain(std::iter::once(key)).collect()),
            }
        }
        Ok(())
    }
}

/// An object's key, borrowed from the input unless it holds an escape.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}
