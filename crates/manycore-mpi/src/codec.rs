//! The codec: arguments and results travel serde-encoded with bincode's
//! compact options (variable-length integers, little-endian), appended to a
//! frame's header in the buffer that MPI sends, so an encode writes each byte
//! once.

use bincode::Options;
use bytemuck::{Pod, PodCastError};
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
///
/// Besides bytes, a `Bulk` carries slices of plain data: numbers, arrays of
/// them, or any other [`bytemuck::Pod`] type. [`Bulk::from_slice`] takes
/// the slice's bytes in one copy, into the buffer MPI then sends from (the
/// copy a caller filling a `Vec<u8>` would make); on the receiving side
/// [`Bulk::as_slice`] views the received buffer as a `&[T]` without a copy,
/// or fails with a [`CodecError`] when the buffer is not a whole number of
/// `T` or not aligned for `T` (never undefined behaviour), and
/// [`Bulk::to_vec`] copies it into a `Vec<T>`, at any alignment. A received
/// buffer is a fresh heap allocation, aligned for the primitive numbers by
/// the usual allocators, so `as_slice` is the common path and `to_vec` the
/// portable one. The bytes are in the sender's byte order: the ranks of a
/// job share one architecture.
///
/// ```
/// use manycore_mpi::{remote_fn, Bulk};
///
/// remote_fn! {
///     /// The sum of the `f64`s that travel as bulk, scaled.
///     pub fn weighted_sum(scale: f64, data: Bulk) -> Result<f64, String> {
///         let xs: &[f64] = data.as_slice().map_err(|e| e.to_string())?;
///         Ok(scale * xs.iter().sum::<f64>())
///     }
/// }
///
/// let xs = [0.5f64, 1.5, 2.0];
/// let bulk = Bulk::from_slice(&xs);
/// assert_eq!(bulk.0.len(), 24);
/// // With the `mpi` feature: `place.call_bulk(&weighted_sum, 2.0, bulk)`.
/// assert_eq!(weighted_sum.run(2.0, bulk.clone()), Ok(8.0));
/// // 24 bytes are not a whole number of `u128`s: an error, not a panic.
/// assert!(bulk.as_slice::<u128>().is_err());
/// assert_eq!(bulk.to_vec::<u64>().unwrap().len(), 3);
/// ```
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

    /// The bytes of `data` (in this machine's byte order), copied once into
    /// the vector that MPI will send from.
    pub fn from_slice<T: Pod>(data: &[T]) -> Bulk {
        Bulk(bytemuck::cast_slice::<T, u8>(data).to_vec())
    }

    /// The bytes as a slice of `T`, without a copy. Fails when their length
    /// is not a whole number of `T`, or when the buffer is not aligned for
    /// `T` (then [`to_vec`](Self::to_vec) still works).
    pub fn as_slice<T: Pod>(&self) -> Result<&[T], CodecError> {
        pod_slice(&self.0)
    }

    /// The bytes copied into a vector of `T`, at any alignment. Fails when
    /// their length is not a whole number of `T`.
    pub fn to_vec<T: Pod>(&self) -> Result<Vec<T>, CodecError> {
        let size = std::mem::size_of::<T>();
        if self.0.is_empty() {
            return Ok(Vec::new());
        }
        if size == 0 || self.0.len() % size != 0 {
            return Err(slop::<T>(self.0.len()));
        }
        let mut out = vec![T::zeroed(); self.0.len() / size];
        bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(&self.0);
        Ok(out)
    }
}

/// `bytes` viewed as a slice of `T`, or why not.
fn pod_slice<T: Pod>(bytes: &[u8]) -> Result<&[T], CodecError> {
    if bytes.is_empty() {
        // An empty vector's pointer is only aligned for `u8`.
        return Ok(&[]);
    }
    bytemuck::try_cast_slice(bytes).map_err(|e| match e {
        PodCastError::TargetAlignmentGreaterAndInputNotAligned => CodecError(format!(
            "bulk of {} bytes at an address not aligned for {} (align {}); use Bulk::to_vec",
            bytes.len(),
            std::any::type_name::<T>(),
            std::mem::align_of::<T>()
        )),
        _ => slop::<T>(bytes.len()),
    })
}

fn slop<T>(len: usize) -> CodecError {
    CodecError(format!(
        "bulk of {len} bytes is not a whole number of {} ({} bytes each)",
        std::any::type_name::<T>(),
        std::mem::size_of::<T>()
    ))
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
