package images

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The repository's images.yaml parses and matches the contexts beside it.
func TestTheTableNamesEveryContext(t *testing.T) {
	table, err := LoadTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Contexts) == 0 || len(table.PaddleImages) == 0 {
		t.Fatalf("empty table: %+v", table)
	}
}

func TestTableErrorsNameTheEntry(t *testing.T) {
	dockerfile := &fstest.MapFile{Data: []byte("FROM paddlepaddle/paddle:3.0.0\n")}
	for _, tt := range []struct {
		name, table string
		dirs        []string
		want        []string
	}{
		{"a context without a directory", "contexts:\n  a: {images: [x/a]}\n  b: {images: [x/b]}\n", []string{"a"},
			[]string{"contexts.b: no build context examples/images/b with a Dockerfile"}},
		{"a directory the table does not name", "contexts:\n  a: {images: [x/a]}\n", []string{"a", "b"},
			[]string{"the build context examples/images/b is not named"}},
		{"one image for two contexts", "paddleImages: [x/a]\ncontexts:\n  a: {images: [x/a]}\n  b: {images: [x/b, x/a]}\n", []string{"a", "b"},
			[]string{`contexts.a: image "x/a" is paddleImages's already`, `contexts.b: image "x/a" is paddleImages's already`}},
		{"a context without images", "contexts:\n  a: {pythonSDK: true}\n", []string{"a"},
			[]string{"contexts.a: images: name at least one"}},
		{"a prefix", "contexts:\n  a: {images: [\"x/*\"]}\n", []string{"a"},
			[]string{`contexts.a: image name "x/*": want a name, with or without a tag`}},
		{"an unknown field", "contexts:\n  a: {images: [x/a], python: true}\n", []string{"a"},
			[]string{`unknown field "python"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{TableFile: {Data: []byte(tt.table)}}
			for _, d := range tt.dirs {
				fsys[d+"/Dockerfile"] = dockerfile
			}
			_, err := loadTable(fsys)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
