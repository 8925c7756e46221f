// Prints one property of a properties file as java.util.Properties reads it
// (YCSB's -P): java ReadProperty.java FILE KEY. Used by command_test.go.
public class ReadProperty {
  public static void main(String[] args) throws Exception {
    java.util.Properties p = new java.util.Properties();
    try (java.io.Reader r = new java.io.InputStreamReader(new java.io.FileInputStream(args[0]), "ISO-8859-1")) {
      p.load(r);
    }
    System.out.print(p.getProperty(args[1]));
  }
}
