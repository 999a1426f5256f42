//! The codec: arguments and results travel serde-encoded with bincode's
//! compact options (variable-length integers, little-endian), appended to a
//! frame's header in the buffer that MPI sends, so an encode writes each byte
//! once.

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .allow_trailing_bytes()
}

/// A value that could not be encoded or decoded; the message says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "codec: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

/// Appends the encoding of `v` to `out`.
pub fn encode_into<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), CodecError> {
    options()
        .serialize_into(out, v)
        .map_err(|e| CodecError(e.to_string()))
}

/// The encoding of `v` in a fresh buffer.
pub fn encode<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    encode_into(&mut out, v)?;
    Ok(out)
}

/// Decodes a `T` from the front of `bytes`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    options()
        .deserialize(bytes)
        .map_err(|e| CodecError(e.to_string()))
}

/// Decodes a `T` from the front of `bytes` and advances `bytes` past it.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn decode_prefix<T: DeserializeOwned>(bytes: &mut &[u8]) -> Result<T, CodecError> {
    options()
        .deserialize_from(bytes)
        .map_err(|e| CodecError(e.to_string()))
}

/// Bulk bytes for a function declared with a `Bulk` parameter (see
/// [`remote_fn!`](crate::remote_fn)). They travel as a second MPI message
/// straight from this vector's buffer and arrive in a vector of their own:
/// neither side encodes or copies them. Anywhere else (a field of an
/// ordinary argument) a `Bulk` is encoded like a byte string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bulk(#[serde(with = "bytes")] pub Vec<u8>);

impl From<Vec<u8>> for Bulk {
    fn from(v: Vec<u8>) -> Self {
        Bulk(v)
    }
}

impl Bulk {
    /// The bytes.
    pub fn into_inner(self) -> Vec<u8> {
        self.0
    }
}

/// serde's byte-string path for `Vec<u8>` (one length and one copy, not a
/// sequence of integers).
mod bytes {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(V)
    }
}

#[cfg(test)]
mod tests;
