package sandbox

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr bool
	}{
		{"plain", "42 (bash) S 1 42 7 34816 42 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0", procStat{'S', 42, 7, 123456}, false},
		{"command with spaces and parens", "9 (a) b (c) Z 1 9 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0", procStat{'Z', 9, 3, 77}, false},
		{"no parens", "42 bash S 1", procStat{}, true},
		{"too short", "42 (bash) S 1 42 7", procStat{}, true},
		{"bad number", "42 (bash) S 1 x 7 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 notanumber", procStat{}, true},
		{"empty", "", procStat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseStat = %+v, %v; want %+v, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.Start == 0 || st.zombie() {
		t.Fatalf("implausible stat for this process: %+v", st)
	}
	if _, err := readStat(1 << 30); err != errNoProcess {
		t.Fatalf("missing pid: got %v, want errNoProcess", err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (bash) S 1 42 7 34816 42 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"))
	f.Add([]byte("1 ()) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseStat(data) // must not panic on anything
	})
}
