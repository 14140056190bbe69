//! The fast route for one node: a scanner over the bytes of a node object that builds the [`Node`]
//! directly, without serde's per-field dispatch. It reads the nodes exporters write (names without
//! escapes, integers, ordinary floats, shallow arguments) and declines everything else: escapes,
//! `-0` and integers beyond 64 bits (serde_json reads those as floats), a key given twice, unknown
//! keys, malformed references, anything that is not JSON, arguments nested deeper than
//! [`MAX_DEPTH`]. A declined node is read by the serde visitors (`import::read_nodes`), which also
//! give every error its line and column. So the scanner never decides what a document means; it
//! is a faster way to the node serde would build, and `scan/tests.rs` holds it to that.

use super::node_list::{NodeList, intern};
use super::read_args::{ArgContext, Key, object_arg};
use super::read_nodes::{NODE_FIELDS, NodeParts, kwargs_of};
use crate::graph::{Arg, Cause, Conversion, Dim, FoundBy, Node, OpKind, TensorMeta};
use compact_str::CompactString;
use serde::Deserialize;
use serde::de::IntoDeserializer;
use smallvec::SmallVec;

/// Arguments nested deeper than this are left to serde, which bounds nesting itself. Exported
/// arguments nest two or three levels.
const MAX_DEPTH: usize = 32;

/// Reads the node whose object starts at or after `at` (after whitespace) and adds it to `list`
/// as node `index` (the list's length): the offset just past its closing brace. `None` when the
/// scanner declines the node; `list` is then as it was, but for strings and shapes it may have
/// stored for sharing.
pub(super) fn scan_node(text: &str, at: usize, list: &mut NodeList, index: u32) -> Option<usize> {
    let pending = list.pending.len();
    let mut scanner = Scanner { text, at };
    match scanner.node(list, index) {
        Some(node) => {
            // Built in place in the list: a node is a few hundred bytes, moved as few times as can be.
            list.push(node);
            Some(scanner.at)
        }
        None => {
            list.pending.truncate(pending);
            None
        }
    }
}

/// A JSON number as serde_json hands it to a visitor.
enum Number {
    Unsigned(u64),
    Negative(i64),
    Float(f64),
}

struct Scanner<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scanner<'t> {
    fn node(&mut self, list: &mut NodeList, index: u32) -> Option<Node> {
        let mut parts = NodeParts::default();
        let mut seen = 0u32;
        self.object(|s, key| {
            let field = NODE_FIELDS.iter().position(|f| *f == key)?;
            first_time(&mut seen, field)?;
            match key {
                "name" => {
                    let name = s.string()?;
                    // Its slot in the name index fetched while the rest of the node is read.
                    list.names.prefetch(list.names.hash(name));
                    parts.name = Some(CompactString::new(name));
                }
                "op" => parts.op = Some(op_kind(s.string()?)?),
                "target" => parts.target = Some(Key::Borrowed(s.string()?)),
                "args" => {
                    let mut ctx = ArgContext {
                        list: &mut *list,
                        node: index,
                        field: "args",
                        inputs: &mut parts.inputs,
                    };
                    parts.args_read = true;
                    let args = &mut parts.args;
                    s.array(|s| {
                        args.push(s.arg(&mut ctx, 1)?);
                        Some(())
                    })?;
                }
                "kwargs" => {
                    let mut ctx = ArgContext {
                        list: &mut *list,
                        node: index,
                        field: "kwargs",
                        inputs: &mut parts.inputs,
                    };
                    parts.kwargs_first = !parts.args_read;
                    (s.peek()? == b'{').then_some(())?;
                    parts.kwargs = kwargs_of(s.object_arg(&mut ctx, 1)?)?;
                }
                "supported" => parts.supported = s.optional_bool()?,
                "delegation_tag" => {
                    parts.tag = s.optional_string()?.map(|t| intern(&mut list.tags, t));
                }
                "module_path" => parts.module_path = s.optional_string()?.map(|m| list.symbol(m)),
                "meta" => parts.meta = s.meta(list)?,
                "conversion" => parts.conversion = s.conversion()?,
                _ => return None,
            }
            Some(())
        })?;
        parts.into_node(list).ok()
    }

    /// `meta`: `shape`, `dtype` and `digest`; anything else is skipped, as serde skips it.
    fn meta(&mut self, list: &mut NodeList) -> Option<TensorMeta> {
        let mut meta = TensorMeta::default();
        let mut seen = 0u32;
        self.object(|s, key| {
            match key {
                "shape" => {
                    first_time(&mut seen, 0)?;
                    if s.peek()? == b'n' {
                        return s.literal(b"null");
                    }
                    let mut dims = std::mem::take(&mut list.scratch);
                    dims.clear();
                    let read = s.array(|s| {
                        dims.push(s.dim()?);
                        Some(())
                    });
                    if read.is_some() {
                        meta.shape = Some(list.shape(&dims));
                    }
                    list.scratch = dims;
                    read?;
                }
                "dtype" => {
                    first_time(&mut seen, 1)?;
                    meta.dtype = s.optional_string()?.map(|d| list.symbol(d));
                }
                "digest" => {
                    first_time(&mut seen, 2)?;
                    meta.digest = s.optional_string()?.map(str::to_string);
                }
                _ => s.skip_value(1)?,
            }
            Some(())
        })?;
        Some(meta)
    }

    /// `conversion`: null, or the verdict's members; anything unusual (an unknown member, a
    /// missing `converts`, an escape) is left to serde, which names the error.
    fn conversion(&mut self) -> Option<Option<Box<Conversion>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        let mut converts = None;
        let mut found_by = None;
        let (mut converter, mut call, mut error, mut cause) = (None, None, None, None);
        let mut static_sizes = false;
        let mut seen = 0u32;
        self.object(|s, key| {
            match key {
                "converts" => {
                    first_time(&mut seen, 0)?;
                    converts = Some(s.optional_bool()??);
                }
                "found_by" => {
                    first_time(&mut seen, 1)?;
                    found_by = match s.optional_string()? {
                        None => None,
                        Some("probe") => Some(FoundBy::Probe),
                        Some("verification") => Some(FoundBy::Verification),
                        Some(_) => return None,
                    };
                }
                "converter" => {
                    first_time(&mut seen, 2)?;
                    converter = s.optional_string()?.map(Box::from);
                }
                "call" => {
                    first_time(&mut seen, 3)?;
                    call = s.optional_string()?.map(Box::from);
                }
                "error" => {
                    first_time(&mut seen, 4)?;
                    error = s.optional_string()?.map(Box::from);
                }
                "cause" => {
                    first_time(&mut seen, 5)?;
                    cause = match s.optional_string()? {
                        None => None,
                        Some(text) => Some(Cause::parse(text)?),
                    };
                }
                "static_sizes" => {
                    first_time(&mut seen, 6)?;
                    static_sizes = s.optional_bool()??; // null is serde's error to name
                }
                _ => return None,
            }
            Some(())
        })?;
        Some(Some(Box::new(Conversion {
            converts: converts?,
            found_by,
            converter,
            call,
            error,
            cause,
            static_sizes,
        })))
    }

    /// One argument: any JSON value, a reference written `{"node": NAME}`.
    fn arg(&mut self, ctx: &mut ArgContext<'_>, depth: usize) -> Option<Arg> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.peek()? {
            b'"' => Arg::Str(self.string()?.into()),
            b'{' => self.object_arg(ctx, depth)?,
            b'[' => {
                // Gathered inline and stored at its exact size, as the serde reader does.
                let mut items: SmallVec<[Arg; 6]> = SmallVec::new();
                self.array(|s| {
                    items.push(s.arg(ctx, depth + 1)?);
                    Some(())
                })?;
                Arg::List(items.into_vec().into_boxed_slice())
            }
            b't' | b'f' => Arg::Bool(self.optional_bool()??),
            b'n' => {
                self.literal(b"null")?;
                Arg::Null
            }
            _ => match self.number()? {
                Number::Unsigned(v) => i64::try_from(v).map_or(Arg::UInt(v), Arg::Int),
                Number::Negative(v) => Arg::Int(v),
                Number::Float(v) => Arg::Float(v),
            },
        })
    }

    /// A JSON object as an argument: a reference, or a dictionary.
    fn object_arg(&mut self, ctx: &mut ArgContext<'_>, depth: usize) -> Option<Arg> {
        let mut entries = Vec::new();
        let mut reference = None;
        self.object(|s, key| {
            if key == "node" {
                // Only a name, given once, is a reference the scanner takes.
                (reference.is_none() && s.peek()? == b'"').then_some(())?;
                reference = Some(Some(ctx.reference(s.string()?)));
            } else {
                entries.push((key.into(), s.arg(ctx, depth + 1)?));
            }
            Some(())
        })?;
        object_arg(entries, reference)
    }

    /// A size: an integer from 0 to `i64::MAX`, or a string for a symbolic size.
    fn dim(&mut self) -> Option<Dim> {
        if self.peek()? == b'"' {
            return Some(Dim::Symbolic(self.string()?.to_string()));
        }
        match self.number()? {
            Number::Unsigned(v) if i64::try_from(v).is_ok() => Some(Dim::Static(v)),
            _ => None,
        }
    }

    /// Moves past any JSON value, as serde skips what it ignores.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|s, _| s.skip_value(depth + 1)),
            b'[' => self.array(|s| s.skip_value(depth + 1)),
            b't' | b'f' => self.optional_bool().map(drop),
            b'n' => self.literal(b"null"),
            _ => self.number().map(drop),
        }
    }

    /// An object's members: `member` is called with each key and reads its value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'t str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            if !self.comma_or(b'}')? {
                return Some(());
            }
        }
    }

    /// An array's items: `item` is called at each and reads it.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            if !self.comma_or(b']')? {
                return Some(());
            }
        }
    }

    /// After a member or item: `true` past a comma, `false` past `close`.
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b if b == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, borrowed from the text.
    fn string(&mut self) -> Option<&'t str> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.text.as_bytes();
        self.at = special_byte(bytes, start);
        match *bytes.get(self.at)? {
            b'"' => {}
            _ => return None,
        }
        // Both ends are quotes, so on character boundaries.
        let s = self.text.get(start..self.at)?;
        self.at += 1;
        Some(s)
    }

    fn optional_string(&mut self) -> Option<Option<&'t str>> {
        if self.peek()? == b'n' {
            return self.literal(b"null").map(|()| None);
        }
        self.string().map(Some)
    }

    fn optional_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => self.literal(b"null").map(|()| None),
        }
    }

    /// A number in JSON's grammar, read as serde_json reads it. Floats are handed to serde_json
    /// itself, so that they round exactly as it rounds them.
    fn number(&mut self) -> Option<Number> {
        self.skip_whitespace();
        let start = self.at;
        let negative = self.eat_byte(b'-');
        let digits = self.at;
        let integer_digits = self.digits();
        let bytes = self.text.as_bytes();
        if integer_digits == 0 || (integer_digits > 1 && bytes[digits] == b'0') {
            return None;
        }
        let integer_end = self.at;
        let mut float = false;
        if self.eat_byte(b'.') {
            float = true;
            (self.digits() > 0).then_some(())?;
        }
        if self.eat_byte(b'e') || self.eat_byte(b'E') {
            float = true;
            let _sign = self.eat_byte(b'+') || self.eat_byte(b'-');
            (self.digits() > 0).then_some(())?;
        }
        if float {
            let literal = self.text.get(start..self.at)?;
            return serde_json::from_str(literal).ok().map(Number::Float);
        }
        let mut value: u64 = 0;
        for &d in &bytes[digits..integer_end] {
            value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        match (negative, value) {
            (false, v) => Some(Number::Unsigned(v)),
            // serde_json reads `-0` as a float.
            (true, 0) => None,
            (true, v) => 0i64.checked_sub_unsigned(v).map(Number::Negative),
        }
    }

    /// Moves past ASCII digits; how many.
    fn digits(&mut self) -> usize {
        let start = self.at;
        let bytes = self.text.as_bytes();
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.skip_whitespace();
        let rest = self.text.as_bytes().get(self.at..)?;
        rest.starts_with(word).then(|| self.at += word.len())
    }

    fn skip_whitespace(&mut self) {
        let bytes = self.text.as_bytes();
        while matches!(bytes.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.as_bytes().get(self.at).copied()
    }

    /// Moves past `byte` after whitespace, if it is next.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Moves past `byte` if it is the very next byte (inside a number: no whitespace).
    fn eat_byte(&mut self, byte: u8) -> bool {
        let next = self.text.as_bytes().get(self.at) == Some(&byte);
        self.at += usize::from(next);
        next
    }
}

/// The offset of the first byte at or after `from` that ends a string's plain run: a quote, a
/// backslash or a control character (`bytes.len()` if none). Eight bytes are tested at a time:
/// names and targets are tens of bytes long, and strings are most of a document's bytes.
fn special_byte(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Bytes equal to zero, or below 0x20, marked by their high bit: exact up to the lowest marked
    // byte (a borrow only runs upward from a byte that is marked itself).
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = |v: u64| v.wrapping_sub(ONES * 0x20) & !v & HIGHS;
    let mut at = from;
    while let Some(word) = bytes.get(at..at + 8) {
        let v = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let marked = zero(v ^ (ONES * u64::from(b'"')))
            | zero(v ^ (ONES * u64::from(b'\\')))
            | below_space(v);
        if marked != 0 {
            return at + (marked.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(rest.len())
}

/// Marks `field` as read; `None` when it was read before (a key given twice goes to serde).
fn first_time(seen: &mut u32, field: usize) -> Option<()> {
    let bit = 1 << field;
    let first = *seen & bit == 0;
    *seen |= bit;
    first.then_some(())
}

/// The kind named `s`, by the names serde reads.
fn op_kind(s: &str) -> Option<OpKind> {
    let named: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        s.into_deserializer();
    OpKind::deserialize(named).ok()
}

#[cfg(test)]
mod tests;
