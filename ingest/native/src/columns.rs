//! Arrow-layout column builders: values, a validity bitmap (bit i set when row i is not null,
//! least significant bit first) and, for strings, 32-bit offsets into one data buffer. Python
//! wraps each buffer with `pyarrow.Array.from_buffers`, without copying.

#[derive(Default, Clone)]
pub struct Validity {
    pub bits: Vec<u8>,
    pub nulls: usize,
    len: usize,
}

impl Validity {
    /// Whether row `row` is not null.
    pub fn get(&self, row: usize) -> bool {
        self.bits[row / 8] >> (row % 8) & 1 == 1
    }

    fn push(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.bits.push(0);
        }
        if valid {
            *self.bits.last_mut().unwrap() |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }
}

/// A string column (Arrow `string`: int32 offsets): a row's bytes are appended to `data`, then
/// `close` ends the row; it returns None when the column would pass the 2 GiB that 32-bit
/// offsets reach.
#[derive(Clone)]
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
        self.validity.bits.reserve(rows / 8 + 1);
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
#[derive(Clone)]
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
        self.validity.bits.reserve(rows / 8 + 1);
    }

    /// Row `row`'s value, or None when it is null.
    pub fn get(&self, row: usize) -> Option<T> {
        self.validity.get(row).then(|| self.values[row])
    }

    pub fn push(&mut self, value: Option<T>) {
        self.values.push(value.unwrap_or_default());
        self.validity.push(value.is_some());
    }
}
