//! Reading a document one top-level value and one node at a time, each node by the scanner
//! (`import::scan`) and by serde only when the scanner declines it. Reading is most of the time
//! planning takes, and this is the fast route; anything it cannot read (an error, an unusual
//! document) gives `None`, and the caller reads the document with serde alone, which gives every
//! error its line and column. So the result is always what serde alone would give.
//!
//! A large document's node list is read on two threads. A JSON array can only be read from its
//! start, so the second thread starts at a guess: a place near the middle of the text that looks
//! like the start of a node, `, {"name": "…"`. The guess may lie inside a string or in another
//! field. The first thread reads the document from its start, knowing where each value ends, and
//! takes the second thread's nodes only on arriving at a node that starts exactly at the guess;
//! otherwise it reads them itself.

use super::bridge::{FieldSeed, RawDocument};
use super::node_list::NodeList;
use super::read_nodes::NodeSeed;
use super::scan::scan_node;
use crate::threads::{join, two_cores};
use serde::de::{DeserializeSeed, IgnoredAny};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ScopedJoinHandle;

/// Below this many bytes (about 16,000 nodes) a second thread gains little.
const MIN_BYTES: usize = 4 << 20;

/// Where the second thread starts, as a share of the text: a little after the middle, since the
/// first thread also reads what precedes the node list.
const SECOND_THREAD_FROM: f64 = 0.51;

/// Values read one at a time start two levels shallower than inside the whole document, so
/// serde_json allows them two more levels of nesting. Deeper than this is left to one thread,
/// which fails or not exactly as it would alone.
const MAX_NESTING: usize = 100;

/// Reads the document as described above; `None` when it cannot, and the caller should read it
/// with serde alone.
pub(super) fn read_framed(text: &str) -> Option<RawDocument> {
    let split = if text.len() >= MIN_BYTES && two_cores() {
        find_split(text, (text.len() as f64 * SECOND_THREAD_FROM) as usize)
    } else {
        None
    };
    read_split_at(text, split).map(|(document, _)| document)
}

/// Reads the document with a second thread starting at the first guess at or after `from`. With
/// the document comes the index of the first node the second thread read, if its nodes were taken.
#[cfg(test)]
pub(super) fn read_split_after(text: &str, from: usize) -> Option<(RawDocument, Option<usize>)> {
    read_split_at(text, Some(find_split(text, from)?))
}

/// Reads the document, with a second thread reading nodes from `split` if there is one.
fn read_split_at(text: &str, split: Option<usize>) -> Option<(RawDocument, Option<usize>)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let stop = &stop;
        let mut tail = split.map(|split| scope.spawn(move || read_tail(text, split, stop)));
        let mut framed = Framed {
            text,
            at: 0,
            split,
            stop,
            tail: &mut tail,
            second_from: None,
        };
        let doc = framed
            .document()
            .map(|document| (document, framed.second_from));
        // When the first thread did not take the second's nodes, it read them all itself.
        stop.store(true, Ordering::Relaxed);
        if let Some(unused) = tail {
            join(unused);
        }
        doc
    })
}

/// The second thread's nodes and the offset of the bracket that closes their list.
type Tail = Option<(NodeList, usize)>;

/// The first thread: reads the document one value at a time, as one thread would, except that on
/// arriving at `split` it takes the nodes the second thread read from there.
struct Framed<'t, 's, 'h> {
    text: &'t str,
    at: usize,
    split: Option<usize>,
    stop: &'s AtomicBool,
    tail: &'h mut Option<ScopedJoinHandle<'s, Tail>>,
    second_from: Option<usize>,
}

impl<'t> Framed<'t, '_, '_> {
    fn document(&mut self) -> Option<RawDocument> {
        let mut doc = RawDocument::default();
        self.expect(b'{')?;
        let mut more = !self.close(b'}');
        while more {
            let key: String = self.value(PhantomData)?;
            self.expect(b':')?;
            if key == "nodes" {
                if doc.nodes.is_some() {
                    return None;
                }
                doc.nodes = Some(self.nodes()?);
            } else {
                doc.set(self.value(FieldSeed(&key))?);
            }
            more = self.comma_or(b'}')?;
        }
        self.skip_whitespace();
        let shallow = doc
            .producer
            .as_ref()
            .is_none_or(|p| nesting(p) <= MAX_NESTING);
        (self.at == self.text.len() && doc.missing().is_none() && shallow).then_some(doc)
    }

    fn nodes(&mut self) -> Option<NodeList> {
        self.expect(b'[')?;
        let mut list = NodeList::for_bytes(self.text.len());
        let mut more = !self.close(b']');
        while more {
            self.skip_whitespace();
            if Some(self.at) == self.split {
                let (tail, end) = join(self.tail.take()?)?;
                self.second_from = Some(list.nodes.len());
                list.append(tail);
                self.at = end + 1;
                return shallow(list);
            }
            if self.split.is_some_and(|split| self.at > split) {
                // Past the guess without arriving at it: it was not the start of a node here.
                self.stop.store(true, Ordering::Relaxed);
            }
            self.at = read_node(self.text, self.at, &mut list)?;
            more = self.comma_or(b']')?;
        }
        self.stop.store(true, Ordering::Relaxed);
        shallow(list)
    }

    /// Reads one JSON value at the current place and moves past it.
    fn value<S: DeserializeSeed<'t>>(&mut self, seed: S) -> Option<S::Value> {
        let (value, read) = read_value(self.text, self.at, seed)?;
        self.at += read;
        Some(value)
    }

    fn skip_whitespace(&mut self) {
        self.at = after_whitespace(self.text.as_bytes(), self.at);
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.text.as_bytes().get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// Whether the next byte closes the object or array just opened (and if so, moves past it).
    fn close(&mut self, byte: u8) -> bool {
        self.expect(byte).is_some()
    }

    /// After a member: `true` past a comma, `false` past the closing `byte`.
    fn comma_or(&mut self, byte: u8) -> Option<bool> {
        if self.expect(b',').is_some() {
            Some(true)
        } else {
            self.expect(byte).map(|()| false)
        }
    }
}

/// Reads one JSON value at `at` with a deserializer of its own: the value and its length.
fn read_value<'t, S: DeserializeSeed<'t>>(
    text: &'t str,
    at: usize,
    seed: S,
) -> Option<(S::Value, usize)> {
    let mut de = serde_json::Deserializer::from_str(text.get(at..)?);
    let value = seed.deserialize(&mut de).ok()?;
    // A fresh stream starts its count where the deserializer stands: just after the value.
    let read = de.into_iter::<IgnoredAny>().byte_offset();
    (read > 0).then_some((value, read))
}

/// Reads the node at `at` and adds it to `list`: the offset just past it. The scanner reads it
/// when it can, serde otherwise; `None` when neither can, or when the list is full (ids stay
/// below the marker of unresolved references).
fn read_node(text: &str, at: usize, list: &mut NodeList) -> Option<usize> {
    let index = u32::try_from(list.nodes.len())
        .ok()
        .filter(|&i| i < u32::MAX - 1)?;
    if let Some(end) = scan_node(text, at, list, index) {
        return Some(end);
    }
    let (node, read) = read_value(text, at, NodeSeed { list, index })?;
    list.push(node);
    Some(at + read)
}

/// Reads nodes from `start` to the end of the list they are in; `None` at anything that is not a
/// node list, or when told to stop.
fn read_tail(text: &str, start: usize, stop: &AtomicBool) -> Tail {
    let bytes = text.as_bytes();
    let mut list = NodeList::for_bytes(text.len() - start).keeping_hashes();
    let mut at = start;
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let end = read_node(text, at, &mut list)?;
        at = after_whitespace(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = after_whitespace(bytes, at + 1),
            Some(b']') => return shallow(list).map(|list| (list, at)),
            _ => return None,
        }
    }
}

fn shallow(list: NodeList) -> Option<NodeList> {
    (list.nesting.deepest <= MAX_NESTING).then_some(list)
}

/// How many levels of arrays and objects a value has.
fn nesting(value: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match v {
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            serde_json::Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    deepest
}

/// The offset of the first place at or after `from` that looks like the start of a node: the `{`
/// of an object that follows a comma and whose first key is `"name"`.
fn find_split(text: &str, from: usize) -> Option<usize> {
    const KEY: &str = "\"name\"";
    let bytes = text.as_bytes();
    let mut at = from;
    loop {
        let key = at + text.get(at..)?.find(KEY)?;
        at = key + KEY.len();
        if let Some(start) = before_whitespace(bytes, key).filter(|&i| bytes[i] == b'{')
            && before_whitespace(bytes, start).is_some_and(|i| bytes[i] == b',')
        {
            return Some(start);
        }
    }
}

/// The offset of the last byte before `end` that is not JSON whitespace.
fn before_whitespace(bytes: &[u8], end: usize) -> Option<usize> {
    bytes[..end]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// The offset of the first byte at or after `start` that is not JSON whitespace.
fn after_whitespace(bytes: &[u8], start: usize) -> usize {
    let rest = bytes.get(start..).unwrap_or_default();
    start
        + rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
            .count()
}

#[cfg(test)]
mod tests;
