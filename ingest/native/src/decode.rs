//! The event loop: a JSON array of Chrome-trace events to one column per event field, in the
//! events' order, plus the args fields the tables model. Routing the events to their tables,
//! and the tables' assembly from these columns, stay in Python (`tracewh.ingest.decoder`),
//! over Arrow arrays, with the reference's own rules.
//!
//! Supported is an event whose keys are among the modelled ones (`slot_of`), each of the type the
//! reference's `Event` reads (strings, integer ids, numbers for times), with a ph, with a ts
//! unless it is metadata (ph M), ending within the 64-bit nanosecond range. Anything else
//! makes the whole chunk `Unsupported`, for the reference to decode.

use crate::columns::{Column, StrColumn};
use crate::json::{unescape, Cursor, Member, Res, Unsupported};
use crate::numbers::{integer, micros_to_ns};

/// Integer args fields: (key, bounds). The bounds are those of the reference's msgspec types
/// (Int32, Int64): a value outside them, or not an integer literal, is read as missing.
pub const INT_ARGS: [(&str, i128, i128); 10] = [
    ("device", I32.0, I32.1),
    ("stream", I64.0, I64.1),
    ("correlation", I64.0, I64.1),
    ("External id", I64.0, I64.1),
    ("external id", I64.0, I64.1),
    ("registers per thread", I32.0, I32.1),
    ("shared memory", I64.0, I64.1),
    ("bytes", I64.0, I64.1),
    ("Sequence number", I64.0, I64.1),
    ("cbid", I32.0, I32.1),
];
/// Float args fields: any number (an integer too) read as a double.
pub const FLOAT_ARGS: [&str; 4] = [
    "blocks per SM",
    "warps per SM",
    "est. achieved occupancy %",
    "memory bandwidth (GB/s)",
];
/// Dimension args fields: a list of Int32, whose first three items are x, y and z.
pub const DIMENSION_ARGS: [&str; 2] = ["grid", "block"];

const I32: (i128, i128) = (i32::MIN as i128, i32::MAX as i128);
const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);

/// Event keys read natively (see `slot_of`): text fields (ph, cat, name, bp, s), ids (pid,
/// tid, id), times (ts, dur), and args.

#[derive(Default)]
pub struct Events {
    pub count: usize,
    pub text: [StrColumn; 5],         // ph, cat, name, bp, s
    pub ids: [StrColumn; 3],          // pid, tid, id, as text
    pub id_numbers: [Column<i64>; 2], // pid and tid when they are integers
    pub ts_ns: Column<i64>,
    pub dur_ns: Column<i64>,
    pub args: StrColumn,
    pub int_args: [Column<i64>; 10],
    pub float_args: [Column<f64>; 4],
    pub dimensions: [[Column<i64>; 3]; 2],
}

/// One of the core's columns, by its kind: borrowed (`ColumnRef`) or owned (`OwnedColumn`).
pub enum ColumnOf<S, I, F> {
    Str(S),
    Int(I),
    Float(F),
}

pub type ColumnRef<'a> = ColumnOf<&'a StrColumn, &'a Column<i64>, &'a Column<f64>>;
pub type OwnedColumn = ColumnOf<StrColumn, Column<i64>, Column<f64>>;

impl OwnedColumn {
    pub fn borrowed(&self) -> ColumnRef<'_> {
        match self {
            ColumnOf::Str(column) => ColumnOf::Str(column),
            ColumnOf::Int(column) => ColumnOf::Int(column),
            ColumnOf::Float(column) => ColumnOf::Float(column),
        }
    }
}

impl Events {
    /// Every column, by name, given away: Python is lent the buffers without a copy.
    pub fn into_columns(self) -> Vec<(String, OwnedColumn)> {
        let Events {
            text,
            ids,
            id_numbers,
            ts_ns,
            dur_ns,
            args,
            int_args,
            float_args,
            dimensions,
            ..
        } = self;
        labelled(
            text,
            ids,
            args,
            id_numbers,
            [ts_ns, dur_ns],
            int_args,
            float_args,
            dimensions,
        )
    }
}

/// The columns by name: the event's key (pid_number and tid_number for integer pids and tids,
/// ts_ns and dur_ns for the times), the args field's key, or grid_x .. block_z for the
/// dimensions.
#[allow(clippy::too_many_arguments)]
fn labelled<S, I, F>(
    text: [S; 5],
    ids: [S; 3],
    args: S,
    numbers: [I; 2],
    times: [I; 2],
    ints: [I; 10],
    floats: [F; 4],
    dimensions: [[I; 3]; 2],
) -> Vec<(String, ColumnOf<S, I, F>)> {
    let text = ["ph", "cat", "name", "bp", "s"].iter().zip(text);
    let ids = ["pid", "tid", "id"].iter().zip(ids);
    let mut out: Vec<_> = text
        .chain(ids)
        .chain([(&"args", args)])
        .map(|(key, column)| (key.to_string(), ColumnOf::Str(column)))
        .collect();
    let numbers = ["pid_number", "tid_number"].iter().zip(numbers);
    let times = ["ts_ns", "dur_ns"].iter().zip(times);
    let ints = INT_ARGS.iter().map(|field| &field.0).zip(ints);
    out.extend(
        numbers
            .chain(times)
            .chain(ints)
            .map(|(key, column)| (key.to_string(), ColumnOf::Int(column))),
    );
    for (key, column) in FLOAT_ARGS.iter().zip(floats) {
        out.push((key.to_string(), ColumnOf::Float(column)));
    }
    for (key, axes) in DIMENSION_ARGS.iter().zip(dimensions) {
        for (axis, column) in ["x", "y", "z"].iter().zip(axes) {
            out.push((format!("{key}_{axis}"), ColumnOf::Int(column)));
        }
    }
    out
}

/// Decode a JSON array of events (surrounding whitespace allowed).
pub fn decode(data: &[u8]) -> Res<Events> {
    if std::str::from_utf8(data).is_err() {
        return Err(Unsupported);
    }
    let mut cursor = Cursor::new(data);
    let mut events = Events::default();
    events.reserve(data.len());
    let mut members = Vec::new();
    cursor.expect(b'[')?;
    if !cursor.accept(b']') {
        loop {
            events.event(&mut cursor, &mut members)?;
            if cursor.accept(b']') {
                break;
            }
            cursor.expect(b',')?;
        }
    }
    cursor.skip_whitespace();
    if cursor.pos != data.len() {
        return Err(Unsupported);
    }
    events.pad_args();
    Ok(events)
}

impl Events {
    /// Room for the events of `bytes` of JSON, as real traces hold them (220-580 bytes an
    /// event in ../shared's, args about half of it), so the columns seldom grow (each growth
    /// copies a column). Room that is not filled still holds memory: at 128 bytes an event,
    /// a 16 MB chunk of the DeepSeek trace (280) took 14 MB more of heap at its peak.
    fn reserve(&mut self, bytes: usize) {
        let rows = bytes / 256;
        self.args.data.reserve(bytes / 2);
        self.text
            .iter_mut()
            .chain(&mut self.ids)
            .chain([&mut self.args])
            .for_each(|c| c.reserve(rows));
        self.id_numbers
            .iter_mut()
            .chain([&mut self.ts_ns, &mut self.dur_ns])
            .chain(&mut self.int_args)
            .chain(self.dimensions.iter_mut().flatten())
            .for_each(|c| c.reserve(rows));
        self.float_args.iter_mut().for_each(|c| c.reserve(rows));
    }

    fn event<'a>(&mut self, cursor: &mut Cursor<'a>, members: &mut Vec<Member<'a>>) -> Res<()> {
        cursor.expect(b'{')?;
        let mut seen = [false; 11]; // TEXT_KEYS, ID_KEYS, ts, dur, args
        let mut present = [false; 11]; // seen, and not null
        let mut ts = None;
        let mut dur = None;
        let mut numbers = [None, None];
        let ph_start = self.text[0].data.len();
        members.clear();
        if !cursor.accept(b'}') {
            loop {
                cursor.skip_whitespace();
                let key = cursor.key()?;
                cursor.expect(b':')?;
                cursor.skip_whitespace();
                let slot = slot_of(key)?;
                if std::mem::replace(&mut seen[slot], true) {
                    return Err(Unsupported); // a repeated key: the reference names it
                }
                present[slot] = match slot {
                    0..=4 => self.text_value(cursor, slot)?,
                    5..=7 => match self.id_value(cursor, slot - 5)? {
                        Some(number) => {
                            if slot < 7 {
                                numbers[slot - 5] = number;
                            }
                            true
                        }
                        None => false,
                    },
                    8 => {
                        ts = time_value(cursor)?;
                        ts.is_some()
                    }
                    9 => {
                        dur = time_value(cursor)?;
                        if dur.is_some_and(|d| d < 0) {
                            // The reference's rule for a negative dur is changing (kept in
                            // extra, with a warning): let it decide.
                            return Err(Unsupported);
                        }
                        dur.is_some()
                    }
                    _ => {
                        let start = self.args.data.len();
                        cursor.copy_value(&mut self.args.data, 0, Some(members))?;
                        self.args_fields(start, members)?;
                        true
                    }
                };
                if cursor.accept(b'}') {
                    break;
                }
                cursor.expect(b',')?;
            }
        }
        if !present[0] {
            return Err(Unsupported); // no ph: the reference's error
        }
        if ts.is_none() && self.text[0].data[ph_start..] != *b"M" {
            return Err(Unsupported); // only metadata may lack ts: the reference's error
        }
        if let (Some(start), Some(length)) = (ts, dur) {
            start.checked_add(length).ok_or(Unsupported)?; // ends beyond 64 bits
        }
        for (slot, column) in self.text.iter_mut().enumerate() {
            column.close(present[slot]).ok_or(Unsupported)?;
        }
        for (slot, column) in self.ids.iter_mut().enumerate() {
            column.close(present[5 + slot]).ok_or(Unsupported)?;
        }
        for (column, number) in self.id_numbers.iter_mut().zip(numbers) {
            column.push(number);
        }
        self.ts_ns.push(ts);
        self.dur_ns.push(dur);
        self.args.close(seen[10]).ok_or(Unsupported)?;
        self.count += 1;
        Ok(())
    }

    /// A string, decoded into the column (true), or null (false).
    fn text_value(&mut self, cursor: &mut Cursor, slot: usize) -> Res<bool> {
        if cursor.null() {
            return Ok(false);
        }
        let (raw, _) = cursor.raw_string()?;
        unescape(raw, &mut self.text[slot].data);
        Ok(true)
    }

    /// pid, tid or id: a string, or an integer as its decimal text (and its value); None
    /// for null.
    fn id_value(&mut self, cursor: &mut Cursor, slot: usize) -> Res<Option<Option<i64>>> {
        if cursor.null() {
            return Ok(None);
        }
        let column = &mut self.ids[slot];
        if cursor.peek() == Some(b'"') {
            let (raw, _) = cursor.raw_string()?;
            unescape(raw, &mut column.data);
            return Ok(Some(None));
        }
        let (text, is_integer) = cursor.number()?;
        if !is_integer {
            return Err(Unsupported); // a float id: the reference keeps it in extra
        }
        let number = integer(text)
            .and_then(|n| i64::try_from(n).ok())
            .ok_or(Unsupported)?;
        // An integer's JSON text is its decimal text (JSON has no leading zeros or plus), but
        // for -0.
        column
            .data
            .extend_from_slice(if text == b"-0" { b"0" } else { text });
        Ok(Some(Some(number)))
    }

    /// Pad the args fields' columns, each filled only up to its last value (`args_fields`),
    /// with nulls to every event.
    fn pad_args(&mut self) {
        let rows = self.count;
        self.int_args
            .iter_mut()
            .chain(self.dimensions.iter_mut().flatten())
            .for_each(|c| c.fill_nulls_to(rows));
        self.float_args.iter_mut().for_each(|c| c.fill_nulls_to(rows));
    }

    /// The modelled fields of the args just copied (`members`: the top-level keys of an
    /// object; none for another value).
    fn args_fields(&mut self, start: usize, members: &[Member]) -> Res<()> {
        let text = &self.args.data[start..];
        let mut found: [Option<&[u8]>; ARG_KEYS.len()] = [None; ARG_KEYS.len()];
        for &(key, from, to) in members {
            if let Some(field) = arg_field(key) {
                found[field] = Some(&text[from - start..to - start]);
            }
        }
        let (ints, rest) = found.split_at(INT_ARGS.len());
        let (floats, dimensions_found) = rest.split_at(FLOAT_ARGS.len());
        let row = self.count;
        for ((column, &(_, low, high)), value) in self.int_args.iter_mut().zip(&INT_ARGS).zip(ints)
        {
            let value = value.and_then(integer).filter(|n| (low..=high).contains(n));
            if let Some(value) = value {
                column.set(row, value as i64);
            }
        }
        for (column, value) in self.float_args.iter_mut().zip(floats) {
            if let Some(value) = value.map(float).transpose()?.flatten() {
                column.set(row, value);
            }
        }
        for (columns, value) in self.dimensions.iter_mut().zip(dimensions_found) {
            let items = value.and_then(dimensions).unwrap_or_default();
            for (column, &item) in columns.iter_mut().zip(&items) {
                column.set(row, item);
            }
        }
        Ok(())
    }
}

fn slot_of(key: &[u8]) -> Res<usize> {
    Ok(match key {
        b"ph" => 0,
        b"cat" => 1,
        b"name" => 2,
        b"bp" => 3,
        b"s" => 4,
        b"pid" => 5,
        b"tid" => 6,
        b"id" => 7,
        b"ts" => 8,
        b"dur" => 9,
        b"args" => 10,
        _ => return Err(Unsupported),
    })
}

/// The args fields' keys: INT_ARGS, then FLOAT_ARGS, then DIMENSION_ARGS.
const ARG_KEYS: [&str; INT_ARGS.len() + FLOAT_ARGS.len() + DIMENSION_ARGS.len()] = {
    let (ints, floats) = (INT_ARGS.len(), FLOAT_ARGS.len());
    let mut keys = [""; INT_ARGS.len() + FLOAT_ARGS.len() + DIMENSION_ARGS.len()];
    let mut at = 0;
    while at < keys.len() {
        keys[at] = if at < ints {
            INT_ARGS[at].0
        } else if at < ints + floats {
            FLOAT_ARGS[at - ints]
        } else {
            DIMENSION_ARGS[at - ints - floats]
        };
        at += 1;
    }
    keys
};

/// The args field a key is (its index in ARG_KEYS), over a plain array: the args' every key
/// is looked up.
fn arg_field(key: &[u8]) -> Option<usize> {
    ARG_KEYS.iter().position(|k| k.as_bytes() == key)
}

fn time_value(cursor: &mut Cursor) -> Res<Option<i64>> {
    if cursor.null() {
        return Ok(None);
    }
    let (text, _) = cursor.number()?;
    micros_to_ns(text).map(Some)
}

/// A number's text as a double (correctly rounded, as msgspec reads it for a `float` field);
/// None for another value. An integer beyond 64 bits or a number beyond the double's range,
/// which msgspec reads its own way, is unsupported.
fn float(text: &[u8]) -> Res<Option<f64>> {
    match text.first() {
        Some(b'-' | b'0'..=b'9') => {}
        _ => return Ok(None),
    }
    if integer(text).is_some_and(|n| i64::try_from(n).is_err())
        || (text.iter().all(|b| b.is_ascii_digit() || *b == b'-') && text.len() > 20)
    {
        return Err(Unsupported);
    }
    let value: f64 = std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(Unsupported)?;
    if value.is_finite() {
        Ok(Some(value))
    } else {
        Err(Unsupported)
    }
}

/// A compact JSON list of Int32 literals; None when it is not one.
fn dimensions(text: &[u8]) -> Option<Vec<i64>> {
    let inner = text.strip_prefix(b"[")?.strip_suffix(b"]")?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(|&b| b == b',')
        .map(|item| {
            integer(item)
                .filter(|n| (I32.0..=I32.1).contains(n))
                .map(|n| n as i64)
        })
        .collect()
}
