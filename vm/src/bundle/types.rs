//! Types and roles as a bundle stores them: closed sets, so a reader gets a value it can
//! use instead of text it has to parse again (and could find it cannot).
//!
//! A type of the template language nests (records hold records, arrays hold arrays), so
//! it is stored flat: a table of nodes, each naming the nodes it holds by an index that
//! comes before its own, the whole type last. A nested encoding would let a crafted
//! bundle nest a million levels deep in a million bytes, and decoding it would recurse
//! once per level; the table decodes in a loop and is refused past the bounds a
//! written type keeps ([`MAX_NESTING`] deep, [`MAX_SIZE`] types written out).

use bincode::de::Decoder;
use bincode::enc::Encoder;
use bincode::error::{DecodeError, EncodeError};
use bincode::{Decode, Encode};
use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::Arc;
use tv_stdlib::types::{Field, Record, Type, MAX_NESTING, MAX_SIZE};

/// The type of a parameter, a return value or a JSON output format: [`Type`], with a
/// bounded flat encoding. Written and shown as [`Type`] writes it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ValueType(Type);

impl ValueType {
    /// `any`, what an undeclared type is.
    pub const ANY: ValueType = ValueType(Type::Any);

    /// A type as a template writes it, naming no declared type, if it is one.
    pub fn parse(written: &str) -> Option<ValueType> {
        Type::parse(written).map(ValueType)
    }

    /// The type as the checker and the machine use it.
    pub fn to_type(&self) -> Type {
        self.0.clone()
    }

    /// The type, borrowed.
    pub fn as_type(&self) -> &Type {
        &self.0
    }

    /// Whether it nests and holds no more than a written type may ([`MAX_NESTING`],
    /// [`MAX_SIZE`]); the verifier refuses a bundle with one that does not.
    pub fn is_valid(&self) -> bool {
        self.0.depth() <= MAX_NESTING && self.0.size() <= MAX_SIZE
    }
}

impl From<&Type> for ValueType {
    fn from(t: &Type) -> ValueType {
        ValueType(t.clone())
    }
}

impl From<Type> for ValueType {
    fn from(t: Type) -> ValueType {
        ValueType(t)
    }
}

/// One type of the table: what it holds are indexes of earlier nodes.
#[derive(Encode, Decode)]
enum Node {
    Any,
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array(u32),
    Record {
        name: Option<String>,
        /// Name, optional, type.
        fields: Vec<(String, bool, u32)>,
    },
    Literals(Vec<String>),
}

/// Appends the nodes of `t`, what it holds first, and gives the index of its own.
/// Recurses as deep as the type nests, which a valid type bounds.
fn flatten(t: &Type, nodes: &mut Vec<Node>) -> u32 {
    let node = match t {
        Type::Any => Node::Any,
        Type::String => Node::String,
        Type::Number => Node::Number,
        Type::Boolean => Node::Boolean,
        Type::Null => Node::Null,
        Type::Object => Node::Object,
        Type::Array(item) => Node::Array(flatten(item, nodes)),
        Type::Literals(ls) => Node::Literals(ls.to_vec()),
        Type::Record(r) => Node::Record {
            name: r.name.clone(),
            fields: r
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.optional, flatten(&f.ty, nodes)))
                .collect(),
        },
    };
    nodes.push(node);
    u32::try_from(nodes.len() - 1).unwrap_or(u32::MAX)
}

/// The type a table stands for, built in one pass: each node from the ones before it.
fn build(nodes: Vec<Node>) -> Result<Type, String> {
    let mut built: Vec<Type> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let held = |i: u32| {
            built
                .get(i as usize)
                .cloned()
                .ok_or_else(|| format!("a type holds type {i}, which does not come before it"))
        };
        let t = match node {
            Node::Any => Type::Any,
            Node::String => Type::String,
            Node::Number => Type::Number,
            Node::Boolean => Type::Boolean,
            Node::Null => Type::Null,
            Node::Object => Type::Object,
            Node::Array(i) => Type::Array(Box::new(held(i)?)),
            Node::Literals(ls) => Type::Literals(Arc::new(ls)),
            Node::Record { name, fields } => {
                let fields = fields
                    .into_iter()
                    .map(|(name, optional, i)| {
                        Ok(Field {
                            name,
                            optional,
                            ty: held(i)?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Type::Record(Arc::new(Record::new(name, fields)))
            }
        };
        if t.depth() > MAX_NESTING || t.size() > MAX_SIZE {
            return Err(format!(
                "a type nests deeper than {MAX_NESTING} or holds more than {MAX_SIZE} types"
            ));
        }
        built.push(t);
    }
    built
        .pop()
        .ok_or_else(|| "a type with no nodes".to_string())
}

/// Written as a `Vec<Node>`; a scalar, what most types are, without building one.
impl Encode for ValueType {
    fn encode<E: Encoder>(&self, encoder: &mut E) -> Result<(), EncodeError> {
        let scalar = match self.0 {
            Type::Any => Some(Node::Any),
            Type::String => Some(Node::String),
            Type::Number => Some(Node::Number),
            Type::Boolean => Some(Node::Boolean),
            Type::Null => Some(Node::Null),
            Type::Object => Some(Node::Object),
            Type::Array(_) | Type::Record(_) | Type::Literals(_) => None,
        };
        if let Some(node) = scalar {
            1u64.encode(encoder)?;
            return node.encode(encoder);
        }
        let mut nodes = Vec::new();
        flatten(&self.0, &mut nodes);
        nodes.encode(encoder)
    }
}

/// Read as the `Vec<Node>` it was written as. Most types are one scalar node, read
/// without the table: a 10,000-template bundle holds tens of thousands of types.
impl<C> Decode<C> for ValueType {
    fn decode<D: Decoder<Context = C>>(decoder: &mut D) -> Result<ValueType, DecodeError> {
        let len = u64::decode(decoder)?;
        let len = usize::try_from(len).map_err(|_| DecodeError::OutsideUsizeRange(len))?;
        let nodes = if len == 1 {
            let node = Node::decode(decoder)?;
            if let Some(t) = scalar(&node) {
                return Ok(ValueType(t));
            }
            vec![node]
        } else {
            // As bincode reads a `Vec`: the claim bounds what a crafted length allocates.
            decoder.claim_container_read::<Node>(len)?;
            let mut nodes = Vec::with_capacity(len);
            for _ in 0..len {
                decoder.unclaim_bytes_read(std::mem::size_of::<Node>());
                nodes.push(Node::decode(decoder)?);
            }
            nodes
        };
        build(nodes)
            .map(ValueType)
            .map_err(DecodeError::OtherString)
    }
}

/// The type of a node that holds no other.
fn scalar(node: &Node) -> Option<Type> {
    Some(match node {
        Node::Any => Type::Any,
        Node::String => Type::String,
        Node::Number => Type::Number,
        Node::Boolean => Type::Boolean,
        Node::Null => Type::Null,
        Node::Object => Type::Object,
        Node::Array(_) | Node::Record { .. } | Node::Literals(_) => return None,
    })
}

bincode::impl_borrow_decode!(ValueType);

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Shown as its text (`"object"`): a replay cassette keys a request by the debug form
/// of its task's output format, and recorded cassettes must keep their keys.
impl fmt::Debug for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// As text, as it was when types were stored as text.
impl Serialize for ValueType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The kind of a template that subtask matching may select (DESIGN §4's task types).
/// Only atomic templates are matchable today; the others are listed so that a request
/// naming one finds no template rather than an unknown word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Encode, Decode)]
pub enum TaskType {
    /// One model call.
    Atomic,
    /// Steps in order.
    Sequential,
    /// A fold over a list.
    Reduce,
    /// A shell command.
    Script,
    /// A director's work judged by an evaluator, again until it passes or the
    /// iterations run out.
    DirectorEvaluatorLoop,
}

impl TaskType {
    /// As a template's `type` attribute and a subtask request's `type` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Atomic => "atomic",
            TaskType::Sequential => "sequential",
            TaskType::Reduce => "reduce",
            TaskType::Script => "script",
            TaskType::DirectorEvaluatorLoop => "director_evaluator_loop",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(t: &ValueType) -> Result<ValueType, DecodeError> {
        let config = bincode::config::standard();
        let bytes = bincode::encode_to_vec(t, config).expect("encodes");
        bincode::decode_from_slice::<ValueType, _>(&bytes, config).map(|(t, _)| t)
    }

    #[test]
    fn every_written_type_is_stored_and_shown_as_the_standard_library_shows_it() {
        let written = [
            "any",
            "string",
            "object",
            "array",
            "[]",
            "string[]",
            "object[][]",
            "[][]",
            r#"{approved: boolean, findings: string[], severity?: "low"|"high"}"#,
            r#"{user: {name: string, tags?: ("a"|"b")[]}}[]"#,
        ];
        for w in written {
            let t = Type::parse(w).expect(w);
            let stored = ValueType::from(&t);
            assert_eq!(round_trip(&stored).expect(w), stored, "{w}");
            assert_eq!(stored.to_string(), t.to_string(), "{w}");
            assert_eq!(format!("{stored:?}"), format!("{:?}", t.to_string()), "{w}");
            assert!(stored.is_valid());
        }
        let named = ValueType::from(Type::evaluation_result());
        assert_eq!(
            round_trip(&named).expect("decodes").to_string(),
            "EvaluationResult"
        );
    }

    #[test]
    fn a_table_that_points_forward_or_nests_too_deep_is_refused() {
        let config = bincode::config::standard();
        let decode = |nodes: Vec<Node>| {
            let bytes = bincode::encode_to_vec(&nodes, config).expect("encodes");
            bincode::decode_from_slice::<ValueType, _>(&bytes, config).map(|(t, _)| t)
        };
        assert!(decode(vec![Node::Array(0)]).is_err(), "itself");
        assert!(
            decode(vec![Node::Array(1), Node::String]).is_err(),
            "forward"
        );
        assert!(decode(vec![]).is_err(), "empty");
        let mut deep = vec![Node::String];
        deep.extend((0..1_000_000).map(Node::Array));
        let e = decode(deep).expect_err("a million arrays deep");
        assert!(e.to_string().contains("nests deeper"), "{e}");
        // Records that hold the one before twice stand for 2^n fields written out.
        let mut shared = vec![Node::String];
        shared.extend((0..40).map(|i| Node::Record {
            name: None,
            fields: vec![("a".into(), false, i), ("b".into(), false, i)],
        }));
        assert!(decode(shared).is_err(), "past the size bound");
        let mut deepest = Type::String;
        for _ in 0..MAX_NESTING + 1 {
            deepest = Type::Array(Box::new(deepest));
        }
        assert!(!ValueType::from(deepest).is_valid());
    }
}
