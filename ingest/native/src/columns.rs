//! Arrow-layout column builders: values, a validity bitmap (bit i set when row i is not null,
//! least significant bit first) and, for strings, 32-bit offsets into one data buffer. Python
//! wraps each buffer with `pyarrow.Array.from_buffers`, without copying.

/// A column's validity, materialised only once the column holds a null: a column without one
/// (most of them, in most chunks) has no bitmap to push to, and Arrow takes none for it. A run
/// of nulls is appended at once (`push_nulls`): the args fields' columns are filled only where
/// an event holds the field, their gaps padded when the next value (or the chunk's end) comes.
#[derive(Default)]
pub struct Validity {
    /// Empty while `nulls` is 0; then a bit for each of the `len` rows.
    pub bits: Vec<u8>,
    pub nulls: usize,
    len: usize,
}

impl Validity {
    /// Whether row `row` is not null.
    pub fn get(&self, row: usize) -> bool {
        self.nulls == 0 || self.bits[row / 8] >> (row % 8) & 1 == 1
    }

    #[inline]
    fn push(&mut self, valid: bool) {
        if valid && self.nulls == 0 {
            self.len += 1;
        } else if valid {
            if self.len.is_multiple_of(8) {
                self.bits.push(0);
            }
            *self.bits.last_mut().unwrap() |= 1 << (self.len % 8);
            self.len += 1;
        } else {
            self.push_nulls(1);
        }
    }

    /// Append `count` null rows.
    fn push_nulls(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        if self.nulls == 0 {
            // the first null: every row before it is valid
            self.bits = vec![0xFF; self.len / 8];
            if !self.len.is_multiple_of(8) {
                self.bits.push((1 << (self.len % 8)) - 1);
            }
        }
        // a row's bit is set only when it is valid, so the bits past `len` are clear
        self.len += count;
        self.nulls += count;
        self.bits.resize(self.len.div_ceil(8), 0);
    }
}

/// A string column (Arrow `string`: int32 offsets): a row's bytes are appended to `data`, then
/// `close` ends the row; it returns None when the column would pass the 2 GiB that 32-bit
/// offsets reach.
pub struct StrColumn {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub validity: Validity,
}

impl Default for StrColumn {
    fn default() -> Self {
        StrColumn {
            offsets: vec![0],
            data: Vec::new(),
            validity: Validity::default(),
        }
    }
}

impl StrColumn {
    pub fn reserve(&mut self, rows: usize) {
        self.offsets.reserve(rows);
    }

    /// Row `row`'s bytes, or None when it is null.
    pub fn get(&self, row: usize) -> Option<&[u8]> {
        let range = self.offsets[row] as usize..self.offsets[row + 1] as usize;
        self.validity.get(row).then(|| &self.data[range])
    }

    /// End the current row: its bytes are what was appended to `data` since the last row.
    pub fn close(&mut self, valid: bool) -> Option<()> {
        let end = i32::try_from(self.data.len()).ok()?;
        self.offsets.push(end);
        self.validity.push(valid);
        Some(())
    }
}

/// A fixed-width column (int32, int64, float64).
pub struct Column<T> {
    pub values: Vec<T>,
    pub validity: Validity,
}

impl<T: Default> Default for Column<T> {
    fn default() -> Self {
        Column {
            values: Vec::new(),
            validity: Validity::default(),
        }
    }
}

impl<T: Default + Copy> Column<T> {
    pub fn reserve(&mut self, rows: usize) {
        self.values.reserve(rows);
    }

    /// Row `row`'s value, or None when it is null.
    pub fn get(&self, row: usize) -> Option<T> {
        self.validity.get(row).then(|| self.values[row])
    }

    pub fn push(&mut self, value: Option<T>) {
        self.values.push(value.unwrap_or_default());
        self.validity.push(value.is_some());
    }

    /// Pad the column with nulls to `rows` rows.
    pub fn fill_nulls_to(&mut self, rows: usize) {
        let count = rows.saturating_sub(self.values.len());
        self.values.resize(rows.max(self.values.len()), T::default());
        self.validity.push_nulls(count);
    }

    /// Row `row`'s value, the rows before it since the last value null.
    pub fn set(&mut self, row: usize, value: T) {
        self.fill_nulls_to(row);
        self.push(Some(value));
    }
}
