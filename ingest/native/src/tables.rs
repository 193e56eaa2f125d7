//! A chunk's tables from its decoded columns: each event's (ph, cat) pair is coded (`pairs`),
//! Python routes the few distinct pairs with the reference's rules (tracewh.ingest.decoder),
//! and `build` gathers each table's rows of the columns it names into new Arrow buffers, with
//! the GIL released. So no routing rule lives here, and no per-event work stays in Python.

use std::collections::HashMap;

use crate::columns::{Column, StrColumn, Validity};
use crate::decode::{ColumnRef, Events, OwnedColumn};
use crate::json::{Res, Unsupported};

/// The distinct (ph, cat) pairs of a chunk, in order of first appearance.
pub struct Pairs {
    /// (ph, cat or None) of each pair.
    pub keys: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Events of each pair.
    pub counts: Vec<usize>,
    /// Events of each pair holding a dur, an id, a bp and an s: fields some tables have no
    /// column for (the reference keeps them in `extra`).
    pub fields: Vec<[usize; 4]>,
    /// Each event's pair.
    pub code_of_event: Vec<u32>,
}

/// Code each event by its (ph, cat) pair.
pub fn pairs(events: &Events) -> Pairs {
    let [ph, cat, _, bp, s] = &events.text;
    let id = &events.ids[2];
    let mut codes: HashMap<(&[u8], Option<&[u8]>), u32> = HashMap::new();
    let mut out = Pairs {
        keys: Vec::new(),
        counts: Vec::new(),
        fields: Vec::new(),
        code_of_event: Vec::with_capacity(events.count),
    };
    for row in 0..events.count {
        let key = (ph.get(row).unwrap_or_default(), cat.get(row));
        let code = *codes.entry(key).or_insert_with(|| {
            out.keys.push((key.0.to_vec(), key.1.map(<[u8]>::to_vec)));
            out.counts.push(0);
            out.fields.push([0; 4]);
            (out.keys.len() - 1) as u32
        });
        let index = code as usize;
        out.counts[index] += 1;
        let present = [
            events.dur_ns.validity.get(row),
            id.validity.get(row),
            bp.validity.get(row),
            s.validity.get(row),
        ];
        for (count, here) in out.fields[index].iter_mut().zip(present) {
            *count += usize::from(here);
        }
        out.code_of_event.push(code);
    }
    out
}

/// One table as Python plans it: its pairs' codes, the category its rows of each pair take
/// (the mapped Kineto category), and its columns as (Arrow type, the core columns it is the
/// first non-null of). Two column names are not the core's: `event_index` (the event's
/// position in the file) and `category`.
pub struct Plan {
    pub codes: Vec<u32>,
    pub categories: Vec<Option<String>>,
    pub columns: Vec<(String, Vec<String>)>,
}

/// A built column, in the table's type.
pub enum Built {
    Str(StrColumn),
    Int64(Column<i64>),
    Int32(Column<i32>),
    Float64(Column<f64>),
}

/// Each planned table's row count and columns; Unsupported where a value does not fit its
/// column's type (the reference then names the event) or a string column passes 2 GiB.
///
/// The core's columns are taken, not borrowed, and gathered column by column: each is
/// dropped once every table column it is a source of is built (a column no table names, at
/// once). Every event lands in one table, so a column's gathered rows are no larger than the
/// column, and the chunk's heap peaks at about its columns once, not its columns and every
/// table's buffers together.
pub fn build(
    events: Events,
    pairs: &Pairs,
    first_event: i64,
    plans: &[Plan],
) -> Res<Vec<(usize, Vec<Built>)>> {
    let mut table_of_code = vec![usize::MAX; pairs.keys.len()];
    let mut category_of_code = vec![None; pairs.keys.len()];
    for (table, plan) in plans.iter().enumerate() {
        for (&code, category) in plan.codes.iter().zip(&plan.categories) {
            *table_of_code.get_mut(code as usize).ok_or(Unsupported)? = table;
            category_of_code[code as usize] = category.as_deref().map(str::as_bytes);
        }
    }
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); plans.len()];
    for (row, &code) in pairs.code_of_event.iter().enumerate() {
        let table = table_of_code[code as usize];
        rows.get_mut(table).ok_or(Unsupported)?.push(row as u32); // every event routed
    }
    let (names, columns): (Vec<String>, Vec<OwnedColumn>) = events.into_columns().into_iter().unzip();
    let mut columns: Vec<Option<OwnedColumn>> = columns.into_iter().map(Some).collect();
    let mut built: Vec<Vec<Option<Built>>> = plans
        .iter()
        .map(|plan| plan.columns.iter().map(|_| None).collect())
        .collect();
    // due[i]: the (table, column, sources) built once core column i, the last of their
    // sources, is reached; last_use[i]: the last core column after which i is still needed
    let mut due: Vec<Vec<(usize, usize, Vec<usize>)>> = vec![Vec::new(); columns.len()];
    let mut last_use: Vec<Option<usize>> = vec![None; columns.len()];
    for (table, (plan, rows)) in plans.iter().zip(&rows).enumerate() {
        for (index, (kind, sources)) in plan.columns.iter().enumerate() {
            let column = &mut built[table][index];
            match sources.first().map(String::as_str) {
                Some("event_index") => {
                    *column = Some(Built::Int64(Column {
                        values: rows.iter().map(|&r| first_event + i64::from(r)).collect(),
                        validity: Validity::default(), // never null
                    }))
                }
                Some("category") => {
                    *column = Some(Built::Str(gather_strings(rows, |row| {
                        category_of_code[pairs.code_of_event[row] as usize]
                    })?))
                }
                None => *column = Some(gather(kind, &[], rows)?),
                Some(_) => {
                    let found = sources
                        .iter()
                        .map(|key| names.iter().position(|name| name == key).ok_or(Unsupported))
                        .collect::<Res<Vec<_>>>()?;
                    let ready = *found.iter().max().ok_or(Unsupported)?;
                    for &source in &found {
                        last_use[source] = last_use[source].max(Some(ready));
                    }
                    due[ready].push((table, index, found));
                }
            }
        }
    }
    for (column, last) in columns.iter_mut().zip(&last_use) {
        if last.is_none() {
            *column = None; // no table reads it
        }
    }
    for (step, ready) in due.into_iter().enumerate() {
        for (table, index, sources) in ready {
            let sources = sources
                .iter()
                .map(|&source| columns[source].as_ref().map(OwnedColumn::borrowed))
                .collect::<Option<Vec<_>>>()
                .ok_or(Unsupported)?;
            let (kind, _) = &plans[table].columns[index];
            built[table][index] = Some(gather(kind, &sources, &rows[table])?);
        }
        for (column, last) in columns.iter_mut().zip(&last_use) {
            if *last == Some(step) {
                *column = None;
            }
        }
    }
    rows.iter()
        .zip(built)
        .map(|(rows, columns)| {
            let columns = columns.into_iter().collect::<Option<Vec<_>>>();
            Ok((rows.len(), columns.ok_or(Unsupported)?))
        })
        .collect()
}

/// Rows `rows` of the first non-null of `sources` (all of one kind) as a column of `kind`.
fn gather(kind: &str, sources: &[ColumnRef], rows: &[u32]) -> Res<Built> {
    match (kind, sources) {
        ("string", [ColumnRef::Str(column)]) => {
            Ok(Built::Str(gather_strings(rows, |row| column.get(row))?))
        }
        ("double", [ColumnRef::Float(column)]) => {
            Ok(Built::Float64(gather_values(rows, |row| column.get(row))))
        }
        ("int64" | "int32", _) => {
            let ints = sources
                .iter()
                .map(|column| match column {
                    ColumnRef::Int(column) => Ok(*column),
                    _ => Err(Unsupported),
                })
                .collect::<Res<Vec<_>>>()?;
            let first = |row| ints.iter().find_map(|column| column.get(row));
            if kind == "int64" {
                return Ok(Built::Int64(gather_values(rows, first)));
            }
            let mut fits = true;
            let narrow = gather_values(rows, |row| {
                first(row).and_then(|value| {
                    let value = i32::try_from(value).ok();
                    fits &= value.is_some();
                    value
                })
            });
            fits.then_some(Built::Int32(narrow)).ok_or(Unsupported)
        }
        _ => Err(Unsupported), // a plan naming a column of another kind
    }
}

fn gather_values<T: Default + Copy>(
    rows: &[u32],
    mut value: impl FnMut(usize) -> Option<T>,
) -> Column<T> {
    let mut column = Column::default();
    column.reserve(rows.len());
    for &row in rows {
        column.push(value(row as usize));
    }
    column
}

fn gather_strings<'a>(rows: &[u32], value: impl Fn(usize) -> Option<&'a [u8]>) -> Res<StrColumn> {
    let mut column = StrColumn::default();
    column.reserve(rows.len());
    let size: usize = rows
        .iter()
        .map(|&row| value(row as usize).map_or(0, <[u8]>::len))
        .sum();
    column.data.reserve(size);
    for &row in rows {
        let found = value(row as usize);
        column.data.extend_from_slice(found.unwrap_or_default());
        column.close(found.is_some()).ok_or(Unsupported)?;
    }
    Ok(column)
}
