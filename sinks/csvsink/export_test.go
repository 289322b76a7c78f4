package csvsink

// ColumnIndex is columnIndex, for the tests.
var ColumnIndex = columnIndex
