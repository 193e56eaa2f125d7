"""Exact time: integer nanoseconds parsed from the number's text, never through a double."""

from decimal import Decimal
from fractions import Fraction

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracewh.ingest.events import decode_events, micros_to_ns


def ns_from_text(text):
    """Reference: exact rational arithmetic on the decimal text, truncated toward zero."""
    value = Fraction(Decimal(text)) * 1000
    return int(value)  # int() of a Fraction truncates toward zero


def test_issue_example_is_exact():
    (event,) = decode_events(b'[{"ph": "X", "ts": 1419247333430.849}]')
    assert 1751410836000000000 + micros_to_ns(event.ts) == 1752830083333430849


def test_digits_past_the_third_decimal_are_truncated_toward_zero():
    events = decode_events(b'[{"ts": 1.0009999}, {"ts": -1.0009999}, {"ts": 2.5e-3}, '
                           b'{"ts": 1E3}, {"ts": 0.99999999999999999999999999999999999}]')
    assert [micros_to_ns(e.ts) for e in events] == [1000, -1000, 2, 1000000, 999]


def test_values_outside_int64_are_refused():
    (event,) = decode_events(b'[{"ts": 9223372036854775808}]')
    with pytest.raises(OverflowError):
        micros_to_ns(event.ts)


@given(st.integers(min_value=-(10**15), max_value=10**15),
       st.integers(min_value=0, max_value=10**9 - 1), st.integers(min_value=1, max_value=9))
def test_decimal_text_matches_exact_reference(whole, fraction, digits):
    text = f"{whole}.{str(fraction).zfill(9)[:digits]}"
    (event,) = decode_events(msgspec.json.encode([{"ts": msgspec.Raw(text.encode())}]))
    assert micros_to_ns(event.ts) == ns_from_text(text)


@given(st.integers(min_value=-(2**62) // 1000, max_value=(2**62) // 1000))
def test_integer_microseconds(value):
    (event,) = decode_events(f'[{{"ts": {value}}}]'.encode())
    assert micros_to_ns(event.ts) == value * 1000
