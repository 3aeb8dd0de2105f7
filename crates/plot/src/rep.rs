//! REP import (in progress).
